package gateway

import (
	"time"
)

// Password guesses are limited per account and per client address (see
// internal/throttle). With a gossip cluster the limits hold cluster-wide:
// when one gateway's throttle trips, it bans the account or address for
// the same time on every gateway, so a guesser spreading attempts over
// all gateways still cannot reach AD's lockout threshold.

// Ban key namespaces in the cluster.
const (
	banUser = "user:"
	banAddr = "addr:"
)

// mayTryPassword reports whether a password attempt for account key from
// src may reach the directory now; if not, for how long and why.
func (g *Gateway) mayTryPassword(key, src string) (wait time.Duration, why string, ok bool) {
	if g.cluster != nil {
		now := time.Now()
		if until, banned := g.cluster.Banned(banUser + key); banned {
			return until.Sub(now), "account banned cluster-wide", false
		}
		if until, banned := g.cluster.Banned(banAddr + src); banned {
			return until.Sub(now), "address banned cluster-wide", false
		}
	}
	if wait, ok := g.throttle.Check(key, src); !ok {
		return wait, "throttled", false
	}
	return 0, "", true
}

// passwordFailed counts a failed password attempt and, when that trips a
// limit, bans the account or address cluster-wide for as long.
func (g *Gateway) passwordFailed(key, src string) {
	g.throttle.Failure(key, src)
	if g.cluster == nil {
		return
	}
	now := time.Now()
	if wait, ok := g.throttle.Check(key, ""); !ok {
		if err := g.cluster.Ban(banUser+key, now.Add(wait), "password failures"); err != nil {
			g.log.Error("cluster ban failed", "user", key, "err", err)
		}
	}
	if wait, ok := g.throttle.Check("", src); !ok {
		if err := g.cluster.Ban(banAddr+src, now.Add(wait), "password failures"); err != nil {
			g.log.Error("cluster ban failed", "src", src, "err", err)
		}
	}
}
