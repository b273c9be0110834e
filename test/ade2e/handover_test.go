package ade2e_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// TestUpgradeHandsOverCache: an upgrade hands the AD identity cache over
// (the old process's assembly.ExportIdentities, the new one's
// InheritIdentities, exactly what internal/lifecycle sends over the
// handover socket). A user who logged in through the old process gets in
// with their key at their first login through the new one although its DC
// hangs: served from the handed-over identity, no lookup answered. A
// gateway with the same hanging DC and no handover refuses the same key
// unseen at key_refusal_delay, the reconnect-burst failure this prevents.
func TestUpgradeHandsOverCache(t *testing.T) {
	t.Parallel()
	u := users[aliceName]
	old := newGateway(t, gwOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := old.dir.Version(ctx); err != nil { // the watch has its baseline
		t.Fatal(err)
	}
	// Other tests change the directory meanwhile; a lookup that overlaps
	// a watch round is not cached, so log in until the identity is.
	var blob []byte
	err := harness.WaitFor(ctx, 30*time.Second, func() error {
		mustLogin(t, old.keyClient(u), aliceName, aliceName)
		if blob = old.Parts().ExportIdentities(); !bytes.Contains(blob, []byte(`"name":"`+aliceName+`"`)) {
			return fmt.Errorf("%s not in the old process's export (%d bytes)", aliceName, len(blob))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	hung := gwOptions{Edit: func(c *config.Config) {
		c.Directory.AD.URLs, c.Directory.AD.Timeout = []string{hangingDC(t)}, adTimeout
	}}
	cold := newGateway(t, hung)
	mustRefuse(t, cold.keyClient(u), aliceName)
	cold.waitAudit(t, "the key refused unseen without the handover",
		failFor(aliceName, "publickey", "directory did not answer within key_refusal_delay"))

	next := newGateway(t, hung)
	next.Parts().InheritIdentities(blob)
	start := time.Now()
	mustLogin(t, next.keyClient(u), aliceName, aliceName)
	t.Logf("first login through the new process, its DC hanging: %v", time.Since(start).Round(time.Millisecond))
}
