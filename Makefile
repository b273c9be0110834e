# frontdoor — build, test and run the local stack.
#
#   make deps    install the system packages tests and the stack need (Debian, idempotent)
#   make build   bin/frontdoor
#   make test    every test, race detector on (needs root and `make deps`)
#   make run     the local stack in the foreground (real sshd nodes, gateways, agents, Samba AD)
#   make bench   benchmarks; results in bench/results/, summary in BENCHMARKS.md
#                (RELAYBENCH_FLAGS=--quick: the relay bench in a few minutes)
#   make fuzz    every fuzz target of every package, FUZZTIME each (default 60s; one
#                package: make fuzz FUZZPKGS=./internal/slurm); see test/fuzz.sh
#   make soak    the soak and fault suite against the local stack (~30 min, root);
#                bench/results/soak.*, summary in RELIABILITY.md (SOAK_FLAGS: see
#                go run ./test/cmd/soak -h; a short form runs in make test)
#   make lint    gofmt, go vet, go.mod tidy, every fuzz target has seeds, third_party/x-crypto and rawssh byte for byte
#                against upstream + patches, the Prometheus alert rules (promtool), and a
#                note when x/crypto has a newer release
#                (make test runs it first, so CI fails on a drifted tree)
#   make docs    docs/configuration.md, from the configuration types and their comments

SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)
GO ?= go
STATE_DIR ?= $(CURDIR)/.stack

# Debian packages: OpenSSH server and client for the login nodes and the
# tests' clients, rsync/socat for the tests, Samba for a real AD domain
# controller, Slurm with accounting (munge, MariaDB, slurmdbd) for the
# reconciler tests, Chromium for the status page test, and prometheus for its promtool (the
# only Debian package that ships it; on a host with systemd it also starts a Prometheus
# server: `systemctl disable --now prometheus` if you do not want one) to check
# deploy/prometheus/. FreeRADIUS (its totp module) and oathtool for the second factor: the tests
# and the stack run their own FreeRADIUS on loopback (on a host with systemd the package also
# starts one on port 1812: `systemctl disable --now freeradius` if you do not want it).
# No winbind: login-node users stay in /etc/passwd (see docs/testing.md).
APT_PACKAGES := openssh-server openssh-client rsync socat samba samba-ad-provision samba-dsdb-modules samba-vfs-modules ldb-tools \
	ca-certificates procps psmisc iproute2 curl nftables \
	slurmctld slurmd slurmdbd slurm-client munge mariadb-server \
	chromium fonts-dejavu-core prometheus \
	freeradius oathtool

.PHONY: deps build test run bench fuzz soak lint docs clean

deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing: $$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "system packages: all present"; fi
	@mkdir -p /run/sshd
	$(GO) mod download

build:
	$(GO) build -o bin/frontdoor ./cmd/frontdoor

test: build lint
	$(GO) test -race -count=1 -timeout 30m ./...
	# The patched x/crypto (third_party/) passes its own ssh tests,
	# the ones against the real sshd as an unprivileged user.
	third_party/test-x-crypto.sh

run: build
	$(GO) build -o bin/frontdoor-stack ./test/cmd/stack
	bin/frontdoor-stack --state-dir "$(STATE_DIR)"

# Benchmarks write bench/results/*.json and *.md; BENCHMARKS.md summarises them.
bench: build
	$(GO) run ./bench/cmd/relaybench --out bench/results $(RELAYBENCH_FLAGS)
	$(GO) run ./bench/gossip -out bench/results/gossip.json
	@if [ -d bench/cmd/authbench ]; then $(GO) run ./bench/cmd/authbench --out bench/results; fi

# Fuzzing: `make test` runs every target over its seed corpus; this runs
# each for FUZZTIME. No lock needed (no real server starts); both cores busy.
FUZZTIME ?= 60s
FUZZPKGS ?=
fuzz:
	FUZZTIME=$(FUZZTIME) test/fuzz.sh $(FUZZPKGS)

# The soak: a thousand held sessions and new logins at the highest rate the
# machine sustains (searched for first), ten minutes steady, then each fault
# under the same load (test/soak/faults.go). Nothing else should run meanwhile.
soak: build
	$(GO) run ./test/cmd/soak --out bench/results $(SOAK_FLAGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' ':!third_party/')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	# Every fuzz target has seeds, so that make test runs it over something.
	test/fuzz.sh --check-seeds
	# The layering docs/ARCHITECTURE.md states (the SSH server's imports, the
	# Slurm and usage commands without it).
	test/layering.sh
	# The module graph is tidy: a fresh `make deps` leaves go.mod and go.sum as they are.
	$(GO) mod tidy -diff
	# third_party/README.md: the vendored x/crypto and rawssh are upstream + patches, exactly;
	# the release watch only warns, and only notes a module proxy it cannot reach.
	third_party/check-x-crypto.sh
	# The example alert rules load in Prometheus and fire when they should.
	@command -v promtool >/dev/null || { echo "promtool is missing: make deps installs it (Debian package prometheus)"; exit 1; }
	promtool check rules deploy/prometheus/frontdoor-alerts.yml
	cd deploy/prometheus && promtool test rules frontdoor-alerts_test.yml
	@third_party/watch-x-crypto.sh

# The configuration reference is generated from the code; a test
# (internal/confdoc) fails when it is stale.
docs:
	$(GO) run ./internal/confdoc/gen

clean:
	rm -rf bin
