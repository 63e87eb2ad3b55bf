// OAuth 2.0 authorization code + PKCE (RFC 7636) pieces for the Cognito hosted UI: pure
// functions of their inputs (and of crypto for randomness), so they can be checked on their own.

export function base64url(bytes) {
  let s = "";
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

export function randomString(nBytes = 32) {
  return base64url(crypto.getRandomValues(new Uint8Array(nBytes)));
}

// code_challenge = BASE64URL(SHA-256(ASCII(code_verifier)))
export async function challengeOf(verifier) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return base64url(digest);
}

export function authorizeUrl(cfg, { redirectUri, state, challenge }) {
  const params = new URLSearchParams({
    response_type: "code",
    client_id: cfg.client_id,
    redirect_uri: redirectUri,
    scope: cfg.scopes || "openid email profile",
    state,
    code_challenge: challenge,
    code_challenge_method: "S256",
  });
  return `${cfg.cognito_domain.replace(/\/$/, "")}/oauth2/authorize?${params}`;
}

export function tokenRequest(cfg, fields) {
  return {
    url: `${cfg.cognito_domain.replace(/\/$/, "")}/oauth2/token`,
    body: new URLSearchParams({ client_id: cfg.client_id, ...fields }).toString(),
  };
}

export function logoutUrl(cfg, logoutUri) {
  const params = new URLSearchParams({ client_id: cfg.client_id, logout_uri: logoutUri });
  return `${cfg.cognito_domain.replace(/\/$/, "")}/logout?${params}`;
}
