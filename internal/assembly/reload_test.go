package assembly

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/internal/slurm"
	"github.com/frontdoor-hpc/frontdoor/internal/usage"
)

// A reload applies a new file as a whole, keeps what did not change (the
// directory), refuses keys only an upgrade applies, and changes nothing for
// an invalid file.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	for _, k := range []string{"host", "ca"} {
		if _, err := ca.GenerateKeyFile(filepath.Join(dir, k), ""); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("users.yaml", "users:\n  - {name: alice, groups: [lab]}\n")
	write("known_hosts", "")
	const base = `
gateway: {name: gw1, listen: "127.0.0.1:0", host_keys: [host], user_ca_key: ca, admin_socket: "off", max_connections: 10}
backend: {known_hosts: [known_hosts]}
directory: {kind: static, static: {file: users.yaml}}
nodes: [{name: login1, addr: "127.0.0.1:1", pool: general}]
policy: {rules: [{name: lab, groups: [lab], pools: [general]}]}
audit: {file: AUDIT}
`
	cfgText := func(audit string) string { return strings.Replace(base, "AUDIT", audit, 1) }
	write("gateway.yaml", cfgText("audit-1.jsonl"))
	cfg, err := config.Load(filepath.Join(dir, "gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := Build(context.Background(), cfg, Options{Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	explain := func(user string) error { _, err := a.SSH.Explain(ctx, user); return err }
	if explain("bob") == nil {
		t.Fatal("bob is known before the users file names him")
	}
	running := a.Directory()

	// Nothing the directory comes from changed: the same directory.
	write("gateway.yaml", cfgText("audit-2.jsonl"))
	if err := a.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if a.Directory() != running {
		t.Fatal("a reload that did not touch the directory replaced it")
	}
	if a.Config().Audit.File != filepath.Join(dir, "audit-2.jsonl") {
		t.Fatalf("audit file %s after the reload", a.Config().Audit.File)
	}
	if explain("alice") != nil {
		t.Fatal("alice unknown after the reload")
	}
	a.Audit.Record(audit.Event{Type: audit.TypeAdmin, User: "after-reload"})
	for file, want := range map[string]bool{"audit-1.jsonl": false, "audit-2.jsonl": true} {
		b, _ := os.ReadFile(filepath.Join(dir, file))
		if strings.Contains(string(b), "after-reload") != want {
			t.Errorf("%s has the event recorded after the reload: %v, want %v", file, !want, want)
		}
	}

	// The users file changed: a new directory, with bob.
	write("users.yaml", "users:\n  - {name: alice, groups: [lab]}\n  - {name: bob, groups: [lab]}\n")
	if err := a.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if a.Directory() == running || explain("bob") != nil {
		t.Fatal("the users file's change did not reach new logins")
	}

	// An invalid users file: nothing changes, the problem is located.
	write("users.yaml", "users:\n  - {name: carol, groups: [lab], shell: /bin/zsh}\n")
	var re *ReloadError
	if err := a.Reload(ctx); !errors.As(err, &re) || re.Refused || len(re.Problems) != 1 ||
		!strings.Contains(re.Problems[0], "users.yaml:2: users[0].shell") {
		t.Fatalf("invalid users file: %v", err)
	}
	if explain("bob") != nil {
		t.Fatal("an invalid reload took bob away")
	}

	// A key only an upgrade applies: refused, naming it.
	write("users.yaml", "users:\n  - {name: alice, groups: [lab]}\n  - {name: bob, groups: [lab]}\n")
	write("gateway.yaml", strings.Replace(cfgText("audit-3.jsonl"), "name: gw1", "name: gw9", 1))
	if err := a.Reload(ctx); !errors.As(err, &re) || !re.Refused || len(re.Problems) != 1 ||
		!strings.Contains(re.Problems[0], "gateway.yaml:2: gateway.name: changed") {
		t.Fatalf("gateway.name changed: %v", err)
	}
	if a.Config().Gateway.Name != "gw1" || a.Config().Audit.File != filepath.Join(dir, "audit-2.jsonl") {
		t.Fatal("a refused reload changed something")
	}
}

// TestBudgetKeyComparesValues: two loads of the same file give pointers
// to equal usage.aws sections; the budget watch (and its month of
// accounting) is kept, and a changed section makes a new one.
func TestBudgetKeyComparesValues(t *testing.T) {
	sl := slurm.Config{Timeout: 5 * time.Second}
	u1 := usage.Config{Currency: "USD", AWS: &usage.AWSConfig{Cluster: "hp1", Metric: "unblended"}}
	u2 := usage.Config{Currency: "USD", AWS: &usage.AWSConfig{Cluster: "hp1", Metric: "unblended"}}
	if k1, k2 := budgetKey(sl, u1), budgetKey(sl, u2); k1 == "" || k1 != k2 {
		t.Fatalf("equal sections at different addresses: keys %q and %q", k1, k2)
	}
	u2.AWS.Cluster = "hp2"
	if budgetKey(sl, u1) == budgetKey(sl, u2) {
		t.Fatal("a changed usage.aws kept the key")
	}
}
