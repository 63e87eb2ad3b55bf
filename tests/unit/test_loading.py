"""What a submission adds that is loaded or run but cannot be read as source, or that changes
what gets loaded (domain/loading.py): each member of the family hits, and its honest neighbour
does not."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

import pytest

from taskgate.domain import loading, screen
from taskgate.domain.loading import Change, Hit, Knowledge, find, reason, uncollected
from taskgate.verifier import checkout

KNOWN = Knowledge(stdlib=frozenset(sys.stdlib_module_names))
# A small project: a package under src/, tests beside it, a node library.
TREE = [
    "README.md",
    "pyproject.toml",
    "package.json",
    "src/slug/__init__.py",
    "src/slug/core.py",
    "tests/test_slug.py",
    "lib/slug.js",
    "test/slug.test.js",
]


def add(path: str, data: bytes | str = b"x = 1\n", *, mode: str = "100644", status: str = "added") -> Change:
    raw = data.encode() if isinstance(data, str) else data
    return Change.of(path, status, mode, raw)  # type: ignore[arg-type]


def hits(
    *changes: Change,
    tree: Sequence[str] = (),
    commands: Sequence[str] = ("python -m pytest",),
    base: Mapping[str, str | None] | None = None,
) -> list[tuple[str, str]]:
    every = [*TREE, *tree, *(c.path for c in changes if c.status != "deleted")]
    found = find(
        list(changes), tree=set(every), commands=list(commands), baseline_text=base or {}, knowledge=KNOWN
    )
    return [(h.path, h.kind) for h in found]


# -- what the screen cannot read ----------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["src/slug/__pycache__/core.cpython-311.pyc", "src/slug/core.pyc", "legacy.pyo", "__pycache__/notes.txt"],
)
def test_bytecode_anywhere_hits(path: str) -> None:
    assert hits(add(path, b"\xa7\r\r\n\x00\x00")) == [(path, "bytecode")]


def test_a_symlink_hits_with_its_target_and_a_submodule_hits() -> None:
    link = add("src/slug/fast.py", b"../../tests/impl.py", mode="120000")
    assert link.target == "../../tests/impl.py"
    found = find([link], tree=TREE, commands=[], baseline_text={}, knowledge=KNOWN)
    assert found == [Hit("src/slug/fast.py", "symlink", "symlink to ../../tests/impl.py")]
    gitlink = Change.of("vendor/lib", "added", "160000", None)
    assert hits(gitlink) == [("vendor/lib", "submodule")]
    # A symlink the submission removes, or a regular file that was one, is no hit.
    assert hits(add("old", b"target", mode="120000", status="deleted")) == []
    assert hits(add("src/slug/fast.py", "x = 1\n", status="type_changed")) == []


@pytest.mark.parametrize(
    "path",
    [
        "src/slug/_speed.cpython-311-x86_64-linux-gnu.so",
        "src/slug/_speed.abi3.so",
        "lib/libfast.so.1",
        "src/slug/_speed.pyd",
        "native/addon.node",
        "lib/wasm/slug.wasm",
        "bin/helper.dylib",
    ],
)
def test_extension_modules_and_native_libraries_hit(path: str) -> None:
    assert (path, "native") in hits(add(path, b"\x00\x01\x02\xff"))


def test_native_code_under_any_name_hits_by_its_bytes() -> None:
    assert hits(add("data/table.bin", b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 20)) == [
        ("data/table.bin", "native")
    ]
    assert hits(add("data/table.bin", b"MZ\x90\x00\x03\x00\xff\xfe")) == [("data/table.bin", "native")]
    # A text file that starts with "MZ" is text.
    assert hits(add("docs/MZ.txt", "MZ is a magic number\n")) == []


@pytest.mark.parametrize("path", ["vendor/deps.zip", "deps.egg", "wheels/x-1-py3-none-any.whl", "app.pyz"])
def test_importable_archives_hit(path: str) -> None:
    assert hits(add(path, b"PK\x03\x04\x14\x00")) == [(path, "archive")]


def test_pickles_hit_and_data_files_do_not() -> None:
    assert hits(add("src/slug/table.pkl", b"\x80\x04\x95")) == [("src/slug/table.pkl", "pickle")]
    honest = [
        add("docs/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00"),
        add("assets/font.woff2", b"wOF2\x00\x01\x00\x00\xff"),
        add("data/cities.csv", "name,population\nParis,2100000\n"),
        add("data/blob.bin", b"\x00\x01\x02\x03\xff\xfe"),
        add("src/slug/words.json", '{"a": 1}\n'),
    ]
    assert hits(*honest) == []


def test_an_executable_that_is_not_text_hits_and_a_script_does_not() -> None:
    assert hits(add("tools/run", b"\x00\x01\xfe\xff garbage", mode="100755")) == [("tools/run", "executable")]
    script = add("scripts/release.sh", "#!/bin/sh\nset -e\necho release\n", mode="100755")
    assert hits(script) == []


def test_source_that_is_not_utf8_or_too_large_hits() -> None:
    latin = add("src/slug/core.py", "NAME = 'café'\n".encode("latin-1"), status="modified")
    assert latin.text is None
    assert hits(latin) == [("src/slug/core.py", "not_utf8")]
    assert hits(add("lib/slug.js", "// café\n".encode("latin-1"))) == [("lib/slug.js", "not_utf8")]
    big = Change.of("src/slug/table.py", "added", "100644", b"x = 1\n", size=screen.MAX_BYTES + 1)
    assert big.text is None
    assert hits(big) == [("src/slug/table.py", "too_large")]
    # The same size of data is no source.
    assert hits(Change.of("data/big.csv", "added", "100644", b"a,b\n", size=screen.MAX_BYTES + 1)) == []


def test_the_size_cap_is_the_one_the_verifier_reads_by() -> None:
    assert checkout.ADDED_FILE_MAX_BYTES == screen.MAX_BYTES


def test_a_coding_declaration_that_changes_the_text_hits() -> None:
    # UTF-7: `+AAo-` is a newline to Python, so `y = 2` is a statement the screen never sees.
    hidden = add("src/slug/core.py", "# -*- coding: utf-7 -*-\nx = 1 +AAo-import os +AAo-os._exit(0)\n")
    assert hits(hidden) == [("src/slug/core.py", "encoding")]
    # Non-ASCII UTF-8 text declared latin-1 reads otherwise too.
    assert hits(add("src/slug/b.py", "# coding: latin-1\nNAME = 'café'\n")) == [("src/slug/b.py", "encoding")]
    # A declaration that reads the same text is honest: old files say latin-1 or utf-8.
    assert hits(add("src/slug/c.py", "# -*- coding: latin-1 -*-\nx = 1\n")) == []
    assert hits(add("src/slug/d.py", "# -*- coding: utf-8 -*-\nNAME = 'café'\n")) == []
    assert hits(add("src/slug/e.py", "\ufeffx = 1\n")) == []


# -- what changes what gets loaded --------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "what"),
    [
        ("json.py", "the standard library's"),
        ("src/random/__init__.py", "the standard library's"),
        ("tests/unittest.py", "the standard library's"),
        ("pluggy.py", "the test runner's"),
        ("_pytest/__init__.py", "the test runner's"),
        ("src/hypothesis/__init__.py", "the test runner's"),
        ("pytest_fast.py", "the test runner's"),
        ("requests.py", "a dependency's"),
    ],
)
def test_a_new_top_level_module_named_like_another_shadows_it(path: str, what: str) -> None:
    base = {"pyproject.toml": '[project]\nname = "slug"\ndependencies = ["requests>=2"]\n'}
    found = find([add(path)], tree=[*TREE, path], commands=[], baseline_text=base, knowledge=KNOWN)
    assert [(h.path, h.kind) for h in found] == [(path, "shadow")]
    assert what in found[0].why


def test_a_module_inside_a_package_or_an_unused_directory_does_not_shadow() -> None:
    assert hits(add("src/slug/json.py"), add("src/slug/types.py")) == []
    assert hits(add("docs/random.py")) == []  # not on the path of anything that runs
    # An existing shadowing module the submission edits is not new.
    assert hits(add("json.py", status="modified"), tree=["json.py"]) == []


def test_pytest_pythonpath_entries_are_roots() -> None:
    base = {"pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["lib/py"]\n'}
    found = find([add("lib/py/json.py")], tree=TREE, commands=[], baseline_text=base, knowledge=KNOWN)
    assert [(h.path, h.kind) for h in found] == [("lib/py/json.py", "shadow")]


def test_two_files_for_one_import_name_collide_and_a_package_replacing_a_module_does_not() -> None:
    # slug.py beside a new slug/__init__.py: the package wins, and the diff shows both.
    assert hits(add("src/slug/core/__init__.py"), tree=["src/slug/core.py"]) == [
        ("src/slug/core/__init__.py", "collision")
    ]
    # The honest refactor removes the module.
    refactor = [add("src/slug/core.py", status="deleted"), add("src/slug/core/__init__.py")]
    tree = {p for p in TREE if p != "src/slug/core.py"} | {"src/slug/core/__init__.py"}
    found = find(refactor, tree=tree, commands=["pytest"], baseline_text={}, knowledge=KNOWN)
    assert found == []


def test_a_module_in_a_test_directory_colliding_with_the_project_hits() -> None:
    # pytest puts tests/ first on sys.path: tests/slug.py answers to `import slug`.
    assert hits(add("tests/slug.py")) == [("tests/slug.py", "collision")]
    # A helper with a name of its own does not; neither does a conftest.
    assert hits(add("tests/helpers.py"), add("tests/conftest.py"), tree=["conftest.py"]) == []


def test_javascript_files_answering_to_one_name_collide() -> None:
    assert hits(add("lib/slug.ts", "export const s = 1;\n")) == [("lib/slug.ts", "collision")]
    assert hits(add("lib/slug/index.js", "module.exports = 1;\n")) == [("lib/slug/index.js", "collision")]
    assert hits(add("lib/slug", "module.exports = 1;\n")) == [("lib/slug", "collision")]
    # Declarations and tests beside a module are other names.
    assert hits(add("lib/slug.d.ts", "export {};\n"), add("lib/slug.test.js", "test;\n")) == []


@pytest.mark.parametrize(
    "path",
    [
        "node_modules/left-pad/index.js",
        "web/node_modules/.bin/vitest",
        ".venv/lib/python3.11/site-packages/x.py",
        "lib/python3.11/site-packages/pytest/__init__.py",
        "__pypackages__/3.11/lib/x.py",
        ".yarn/releases/yarn-4.cjs",
        ".pnp.cjs",
        "pyvenv.cfg",
    ],
)
def test_installed_packages_and_resolvers_in_the_commit_hit(path: str) -> None:
    assert (path, "installed") in hits(add(path, "module.exports = 1;\n"))


def test_pth_startup_and_metadata_files_hit() -> None:
    found = hits(
        add("src/slug.pth", "import os; os.environ['X'] = '1'\n"),
        add("sitecustomize.py", "import sys\n"),
        add("tools/usercustomize/__init__.py"),
        add("slug.egg-info/entry_points.txt", "[pytest11]\nx = slug.plugin\n"),
        add("build/slug-1.0.dist-info/METADATA", "Name: slug\n"),
        add("slug.egg-link", "/work/src\n"),
    )
    assert found == [
        ("build/slug-1.0.dist-info/METADATA", "metadata"),
        ("sitecustomize.py", "startup"),
        ("slug.egg-info/entry_points.txt", "metadata"),
        ("slug.egg-link", "metadata"),
        ("src/slug.pth", "pth"),
        ("tools/usercustomize/__init__.py", "startup"),
    ]


def test_env_files_setting_loader_variables_hit() -> None:
    assert hits(add(".env", "PYTHONPATH=tests/fakes\n")) == [(".env", "env_file")]
    assert hits(add("config/test.env", "export NODE_OPTIONS=--require ./x.js\n")) == [
        ("config/test.env", "env_file")
    ]
    assert hits(add(".env.test", "PYTEST_ADDOPTS=-p fake\nDEBUG=1\n")) == [(".env.test", "env_file")]
    found = find(
        [add(".envrc", "LD_PRELOAD=./x.so\n")], tree=TREE, commands=[], baseline_text={}, knowledge=KNOWN
    )
    assert found[0].why == "sets LD_PRELOAD"
    # An application's settings, and an example file, are not.
    assert hits(add(".env", "DATABASE_URL=sqlite:///x.db\nDEBUG=1\n")) == []
    assert hits(add(".env.example", "PYTHONPATH=src\n")) == []


def test_preload_and_transform_configs_hit() -> None:
    for path in (".babelrc", "babel.config.js", ".swcrc", ".mocharc.yml", ".nycrc.json"):
        assert hits(add(path, "{}\n")) == [(path, "preload")], path
    assert hits(add(".coveragerc", "[run]\nplugins = slug.cov\n")) == [(".coveragerc", "preload")]
    assert hits(add(".coveragerc", "[run]\nomit = tests/*\n")) == []


# -- install hooks ------------------------------------------------------------------------------

PYPROJECT = """\
[build-system]
requires = ["setuptools>=77"]
build-backend = "setuptools.build_meta"

[project]
name = "slug"
version = "1.0"
dependencies = ["requests>=2"]
"""


@pytest.mark.parametrize(
    "command",
    [
        "pip install -e . && pytest",
        "python -m pip install . && python -m pytest",
        "uv run pytest",
        "uv sync && pytest",
        "poetry install && poetry run pytest",
        "tox -e py311",
        "hatch test",
    ],
)
def test_setup_py_hits_when_a_check_installs_the_project(command: str) -> None:
    assert hits(add("setup.py", "from setuptools import setup\nsetup()\n"), commands=[command]) == [
        ("setup.py", "install_hook")
    ]


def test_setup_py_does_not_hit_when_no_check_installs() -> None:
    assert (
        hits(add("setup.py", "from setuptools import setup\nsetup()\n"), commands=["python -m pytest"]) == []
    )


def test_pyproject_hook_sections_hit_and_dependencies_do_not() -> None:
    base = {"pyproject.toml": PYPROJECT}
    install = ["pip install -e . && pytest"]
    plugin = PYPROJECT + '\n[project.entry-points.pytest11]\nslug = "slug.plugin"\n'
    found = find(
        [add("pyproject.toml", plugin, status="modified")],
        tree=TREE,
        commands=install,
        baseline_text=base,
        knowledge=KNOWN,
    )
    assert [(h.path, h.kind, h.why) for h in found] == [
        ("pyproject.toml", "install_hook", "changes [project.entry-points]")
    ]
    script = PYPROJECT + '\n[project.scripts]\npytest = "slug.fake:main"\n'
    assert hits(add("pyproject.toml", script, status="modified"), commands=install, base=base) == [
        ("pyproject.toml", "install_hook")
    ]
    backend = PYPROJECT.replace(
        'build-backend = "setuptools.build_meta"', 'build-backend = "mine"\nbackend-path = ["."]'
    )
    assert hits(add("pyproject.toml", backend, status="modified"), commands=install, base=base) == [
        ("pyproject.toml", "install_hook")
    ]
    deps = PYPROJECT.replace('["requests>=2"]', '["requests>=2", "attrs>=23"]')
    assert hits(add("pyproject.toml", deps, status="modified"), commands=install, base=base) == []
    local = PYPROJECT.replace('["requests>=2"]', '["requests>=2", "fake @ file:///tmp/fake"]')
    assert hits(add("pyproject.toml", local, status="modified"), commands=install, base=base) == [
        ("pyproject.toml", "install_hook")
    ]


def test_an_in_tree_build_backend_and_hatch_hook_hit() -> None:
    backend = PYPROJECT.replace(
        'build-backend = "setuptools.build_meta"', 'build-backend = "be"\nbackend-path = ["_build"]'
    )
    base = {"pyproject.toml": backend}
    assert hits(add("_build/be.py", "x = 1\n", status="modified"), commands=["pip install ."], base=base) == [
        ("_build/be.py", "install_hook")
    ]
    assert hits(add("hatch_build.py"), commands=["hatch test"]) == [("hatch_build.py", "install_hook")]


def test_setup_cfg_entry_points_hit_and_install_requires_does_not() -> None:
    old = "[metadata]\nname = slug\n\n[options]\ninstall_requires =\n    requests\n"
    base = {"setup.cfg": old}
    install = ["pip install -e ."]
    new = old + "\n[options.entry_points]\npytest11 =\n    slug = slug.plugin\n"
    assert hits(add("setup.cfg", new, status="modified"), commands=install, base=base) == [
        ("setup.cfg", "install_hook")
    ]
    more = old.replace("requests\n", "requests\n    attrs\n")
    assert hits(add("setup.cfg", more, status="modified"), commands=install, base=base) == []


PACKAGE = '{"name": "slug", "scripts": {"test": "node --test"}, "dependencies": {"left-pad": "^1"}}'


@pytest.mark.parametrize("command", ["npm ci && npm test", "npm install", "yarn", "pnpm i", "bun install"])
def test_package_json_install_scripts_hit_when_a_check_installs(command: str) -> None:
    new = PACKAGE.replace('"test": "node --test"', '"test": "node --test", "postinstall": "node fix.js"')
    assert hits(
        add("package.json", new, status="modified"), commands=[command], base={"package.json": PACKAGE}
    ) == [("package.json", "install_hook")]


def test_package_json_without_an_install_or_with_a_new_dependency_does_not_hit() -> None:
    base = {"package.json": PACKAGE}
    new = PACKAGE.replace('"test": "node --test"', '"test": "node --test", "postinstall": "node fix.js"')
    assert hits(add("package.json", new, status="modified"), commands=["npm test"], base=base) == []
    dep = PACKAGE.replace('"left-pad": "^1"', '"left-pad": "^1", "lodash": "^4"')
    assert hits(add("package.json", dep, status="modified"), commands=["npm ci && npm test"], base=base) == []
    assert hits(add("package-lock.json", "{}\n", status="modified"), commands=["npm ci"], base=base) == []
    local = PACKAGE.replace('"left-pad": "^1"', '"left-pad": "file:./vendor/left-pad"')
    assert hits(add("package.json", local, status="modified"), commands=["npm ci"], base=base) == [
        ("package.json", "install_hook")
    ]


def test_files_the_install_scripts_run_and_binding_gyp_hit() -> None:
    base = {
        "package.json": PACKAGE.replace('"test": "node --test"', '"postinstall": "node scripts/setup.js"')
    }
    assert hits(add("scripts/setup.js", "1;\n", status="modified"), commands=["npm ci"], base=base) == [
        ("scripts/setup.js", "install_hook")
    ]
    assert hits(add("scripts/setup.js", "1;\n", status="modified"), commands=["npm test"], base=base) == []
    assert hits(add("binding.gyp", "{}\n"), commands=["npm install"]) == [("binding.gyp", "install_hook")]


def test_package_manager_config_hits_when_a_check_runs_that_manager() -> None:
    assert hits(add(".npmrc", "node-options=--require ./x.js\n"), commands=["npm test"]) == [
        (".npmrc", "manager_config")
    ]
    assert hits(add(".yarnrc.yml", "yarnPath: x.cjs\n"), commands=["yarn test"]) == [
        (".yarnrc.yml", "manager_config")
    ]
    assert hits(add(".pnpmfile.cjs", "module.exports = {};\n"), commands=["pnpm test"]) == [
        (".pnpmfile.cjs", "manager_config")
    ]
    assert hits(add(".npmrc", "registry=https://example.invalid\n"), commands=["python -m pytest"]) == []


def test_the_recipe_a_check_runs_hits() -> None:
    assert hits(add("Makefile", "test:\n\ttrue\n", status="modified"), commands=["make test"]) == [
        ("Makefile", "runner_file")
    ]
    assert hits(add("noxfile.py", status="modified"), commands=["nox -s tests"]) == [
        ("noxfile.py", "runner_file")
    ]
    assert hits(add("Makefile", "test:\n\ttrue\n", status="modified"), commands=["pytest"]) == []


def test_package_json_entry_points_pointing_out_of_the_source_hit() -> None:
    base = {"package.json": '{"name": "slug", "main": "lib/slug.js"}'}
    for new in (
        '{"name": "slug", "main": "test/fake.js"}',
        '{"name": "slug", "exports": {".": {"node": "./node_modules/x/i.js", "default": "./lib/slug.js"}}}',
        '{"name": "slug", "imports": {"#slug": "../outside/slug.js"}}',
        '{"name": "slug", "main": "lib/slug.node"}',
    ):
        assert hits(add("package.json", new, status="modified"), commands=[], base=base) == [
            ("package.json", "package_map")
        ], new
    for honest in (
        '{"name": "slug", "main": "lib/index.js"}',
        '{"name": "slug", "exports": {".": {"import": "./lib/slug.mjs", "require": "./lib/slug.cjs"}}}',
        '{"name": "slug", "imports": {"#dep": "left-pad"}, "main": "lib/slug.js"}',
    ):
        assert hits(add("package.json", honest, status="modified"), commands=[], base=base) == [], honest


def test_tsconfig_resolution_changes_hit_and_other_options_do_not() -> None:
    old = '{\n  // strict\n  "compilerOptions": {"strict": true,},\n}\n'
    base = {"tsconfig.json": old}
    suffixes = '{"compilerOptions": {"strict": true, "moduleSuffixes": [".fake", ""]}}'
    assert hits(add("tsconfig.json", suffixes, status="modified"), commands=[], base=base) == [
        ("tsconfig.json", "resolution")
    ]
    paths = '{"compilerOptions": {"strict": true, "paths": {"slug": ["test/fake"]}}}'
    assert hits(add("tsconfig.json", paths, status="modified"), commands=[], base=base) == [
        ("tsconfig.json", "resolution")
    ]
    target = '{"compilerOptions": {"strict": true, "target": "es2022"}}'
    assert hits(add("tsconfig.json", target, status="modified"), commands=[], base=base) == []


def test_honest_changes_hit_nothing() -> None:
    install = ["pip install -e . && pytest", "npm ci && npm test"]
    found = hits(
        add("src/slug/core.py", "def slugify(t):\n    return t.lower()\n", status="modified"),
        add("src/slug/helpers/__init__.py"),
        add("tests/test_slug.py", "def test_a():\n    assert 1\n", status="modified"),
        add("tests/test_new.py", "def test_b():\n    assert 1\n"),
        add("tests/helpers.py"),
        add("lib/slug.js", "module.exports = (s) => s;\n", status="modified"),
        add("README.md", "# slug\n", status="modified"),
        add("docs/guide.md", "Use it.\n"),
        add("uv.lock", "version = 1\n", status="modified"),
        add("poetry.lock", "# lock\n"),
        add("yarn.lock", "# lock\n"),
        add("docs/diagram.svg", "<svg/>\n"),
        add("scripts/bump.sh", "#!/bin/sh\necho bump\n", mode="100755"),
        commands=install,
    )
    assert found == []


def test_what_the_verifier_collects() -> None:
    changes = [
        add("src/slug/core.py", status="modified"),
        add("web/tsconfig.json", "{}\n", status="modified"),
    ]
    assert loading.baseline_paths(changes) == [
        "pyproject.toml",
        "package.json",
        "setup.cfg",
        "web/tsconfig.json",
    ]
    cut = Change.of("big.py", "added", "100644", b"x" * 10, size=screen.MAX_BYTES + 5)
    assert (cut.size, cut.text, cut.head) == (screen.MAX_BYTES + 5, None, b"x" * 10)
    assert loading.STATUS_LETTERS["R"] == "renamed"


# -- tests no runner collects -------------------------------------------------------------------


def test_test_files_no_report_names_are_uncollected() -> None:
    changed = [
        "tests/test_slug.py",
        "tests/test_orphan.py",
        "pkg/test_utils.py",
        "src/slug/core.py",
        "tests/conftest.py",
    ]
    found = uncollected(changed, files=[], classnames=["tests.test_slug", "tests.test_slug.TestCase"])
    assert [h.path for h in found] == ["tests/test_orphan.py", "pkg/test_utils.py"]
    # By file attribute, and from a rootdir below the top.
    assert uncollected(["tests/test_orphan.py"], files=["tests/test_orphan.py"], classnames=[]) == []
    assert uncollected(["web/py/tests/test_x.py"], files=[], classnames=["tests.test_x.TestX"]) == []


def test_javascript_test_files_are_judged_only_by_reports_that_name_files() -> None:
    changed = ["test/slug.test.js", "test/orphan.spec.ts", "test/helpers.js"]
    # node --test names no file: nothing can be said.
    assert uncollected(changed, files=[], classnames=["test"]) == []
    # vitest names each file in its classname.
    found = uncollected(changed, files=[], classnames=["test/slug.test.js"])
    assert [h.path for h in found] == ["test/orphan.spec.ts"]


def test_the_reason_names_each_family_and_the_way_out() -> None:
    found = [
        Hit("pkg/__pycache__/slug.cpython-311.pyc", "bytecode", "bytecode"),
        Hit("json.py", "shadow", "a module `json` at the top: shadows the standard library's `json`"),
        Hit("tests/test_orphan.py", "uncollected", "no report names a test from it"),
    ]
    assert reason(found) == (
        "the submission adds files the verifier cannot read as source: "
        "pkg/__pycache__/slug.cpython-311.pyc (bytecode); it changes what gets loaded besides its source: "
        "json.py (a module `json` at the top: shadows the standard library's `json`); it adds test files "
        "no runner collects: tests/test_orphan.py (no report names a test from it). "
        "A human decides: send it back to the executor, or allow it and verify again"
    )
    many = reason([Hit(f"x{i}.pyc", "bytecode", "bytecode") for i in range(12)], limit=2)
    assert "source: x0.pyc (bytecode), x1.pyc (bytecode) and 10 more. A human" in many


def test_every_kind_is_in_the_docstring_table() -> None:
    doc = loading.__doc__ or ""
    for kind in loading.KINDS:
        assert f"| {kind} " in doc, kind
