# Everyday commands. `make test` is the test command the README and CI use.
CARGO ?= cargo

.PHONY: build fmt lint test bench fuzz clean

build:
	$(CARGO) build --release

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

# nextest when it is installed (faster, one process per test), cargo test otherwise.
test:
	@if command -v cargo-nextest >/dev/null 2>&1; then \
		$(CARGO) nextest run --workspace --no-fail-fast; \
	else \
		$(CARGO) test --workspace --no-fail-fast; \
	fi
	$(CARGO) test --workspace --doc

bench:
	$(CARGO) bench -p aria-store --bench audit
	$(CARGO) bench -p aria-tools --bench guards
	$(CARGO) bench -p aria-models --bench stream
	$(CARGO) bench -p aria-cli --bench cli

clean:
	$(CARGO) clean
