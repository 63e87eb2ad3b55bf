// The REST API, as the board calls it: JSON in and out, the session's bearer token, and every
// refusal as an ApiError carrying the server's code, message and hint (plus what it lists).

export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.code = (body && body.code) || `HTTP_${status}`;
    this.hint = (body && body.hint) || "";
    this.currentStatus = (body && body.current_status) || null;
    this.missing = (body && body.missing) || null;
    this.errors = (body && body.errors) || null;
  }
}

const conn = { base: "", token: () => null, refresh: async () => false, signedOut: () => {} };

export function connect(options) {
  Object.assign(conn, options);
}

function url(path, query) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) {
    if (v !== undefined && v !== null && v !== "") params.set(k, String(v));
  }
  const qs = params.toString();
  return `${conn.base}${path}${qs ? `?${qs}` : ""}`;
}

async function send(method, path, body, query) {
  const headers = { Accept: "application/json" };
  const token = conn.token();
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  return fetch(url(path, query), {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store",
    credentials: "omit",
  });
}

export async function api(method, path, body, query) {
  let res = await send(method, path, body, query);
  if (res.status === 401 && (await conn.refresh())) res = await send(method, path, body, query);
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = { code: `HTTP_${res.status}`, message: text.slice(0, 200) };
  }
  if (res.status === 401) conn.signedOut(new ApiError(401, data));
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

// An answer that is not JSON (a JSON Lines bundle), as text; refusals still come back as ApiError.
export async function text(path) {
  let res = await send("GET", path);
  if (res.status === 401 && (await conn.refresh())) res = await send("GET", path);
  const body = await res.text();
  if (res.ok) return body;
  let data;
  try {
    data = JSON.parse(body);
  } catch {
    data = { code: `HTTP_${res.status}`, message: body.slice(0, 200) };
  }
  if (res.status === 401) conn.signedOut(new ApiError(401, data));
  throw new ApiError(res.status, data);
}

export const get = (path, query) => api("GET", path, undefined, query);
export const post = (path, body) => api("POST", path, body);
export const put = (path, body) => api("PUT", path, body);
export const patch = (path, body) => api("PATCH", path, body);

// Every page of a cursor-paged list.
export async function all(path, query, max = 5000) {
  const items = [];
  let cursor = null;
  do {
    const page = await get(path, { ...query, limit: 200, cursor });
    items.push(...page.items);
    cursor = page.cursor;
  } while (cursor && items.length < max);
  return items;
}

export const enc = encodeURIComponent;
