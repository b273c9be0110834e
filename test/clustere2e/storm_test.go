package clustere2e_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	"github.com/frontdoor-hpc/frontdoor/test/harness"
)

// TestReconnectStorm: the other gateway died, and its users all reconnect
// through this one at once: many more handshakes than gateway.max_startups
// (4 here, so that a 2-core machine's worth of clients is a storm). Every
// one must get in: beyond max_startups a connection waits for a place
// (max_startups_queue) instead of being refused. The soak's gateway-kill
// fault: 513 of 1,055 reconnects failed, max_startups refused them.
func TestReconnectStorm(t *testing.T) {
	const (
		maxStartups = 4
		clients     = 60
	)
	w := newWorldOpts(t, worldOpts{edit: func(c *config.Config) {
		g := &c.Gateway
		g.MaxStartups = maxStartups
		// One source (127.0.0.1) for every client here: its own limits
		// must not be what refuses them.
		g.PerSourceMaxStartups, g.PerSourceBurst, g.PerSourceRate = 10*clients, 10*clients, 10*clients
		g.PerSourceLookups, g.PerSourceLookupBurst, g.PerSourceLookupRate = g.MaxLookups, 10*clients, 10*clients
	}}, 1.0, 1.0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	us := make([]*harness.User, 6)
	for i := range us {
		us[i] = w.freshUser()
	}
	g := w.gws[0]
	start := time.Now()
	errs := make([]error, clients)
	took := make([]time.Duration, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			_, errs[i] = w.goNode(ctx, g, us[i%len(us)].Name, us[i%len(us)])
			took[i] = time.Since(t0)
		}()
	}
	wg.Wait()
	var slowest time.Duration
	for _, d := range took {
		slowest = max(slowest, d)
	}
	refused, err := admissionRefusals(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d logins at once through %s (max_startups %d): all done in %s, slowest %s; refused before authentication: %v",
		clients, g.name, maxStartups, time.Since(start).Round(time.Millisecond), slowest.Round(time.Millisecond), refused)
	if err := errors.Join(errs...); err != nil {
		t.Errorf("logins failed: %v", err)
	}
	if n := refused["max_startups"]; n != "" && n != "0" {
		t.Errorf("max_startups refused %v connections of the storm", refused["max_startups"])
	}
}

// admissionRefusals reads frontdoor_connections_refused_total by reason.
func admissionRefusals(ctx context.Context, g *gw) (map[string]string, error) {
	body, err := harness.AdminGet(ctx, g.admin, "/metrics")
	if err != nil {
		return nil, fmt.Errorf("metrics of %s: %w", g.name, err)
	}
	out := map[string]string{}
	for _, m := range refusedConnLine.FindAllStringSubmatch(body, -1) {
		out[m[1]] = strings.TrimSpace(m[2])
	}
	return out, nil
}

var refusedConnLine = regexp.MustCompile(`(?m)^frontdoor_connections_refused_total\{reason="([a-z_]+)"\} ([0-9.e+]+)$`)
