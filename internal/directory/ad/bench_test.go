package ad

import (
	"context"
	"testing"
	"time"
)

// Benchmarks against the package's Samba DC (one DC, loopback, 2 cores).

func benchDir(b *testing.B, ttl time.Duration) *Directory {
	cfg := baseConfig()
	cfg.CacheTTL = ttl
	d, err := New(cfg, testLoggerB())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	return d
}

// BenchmarkLookupWarm: key login with the identity cached.
func BenchmarkLookupWarm(b *testing.B) {
	d := benchDir(b, time.Hour)
	ctx := context.Background()
	if _, err := d.Lookup(ctx, "alice"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := d.Lookup(ctx, "alice"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLookupCold: key login that asks AD (user + nested groups search
// on a pooled connection).
func BenchmarkLookupCold(b *testing.B) {
	d := benchDir(b, time.Nanosecond)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		if _, err := d.Lookup(ctx, "alice"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyPassword: password login (cached identity, user bind on a
// fresh LDAPS connection).
func BenchmarkVerifyPassword(b *testing.B) {
	d := benchDir(b, time.Hour)
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		if _, err := d.VerifyPassword(ctx, "alice", pw("alice")); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyPasswordParallel: password logins per second one DC takes.
func BenchmarkVerifyPasswordParallel(b *testing.B) {
	d := benchDir(b, time.Hour)
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := d.VerifyPassword(ctx, "alice", pw("alice")); err != nil {
				b.Fatal(err)
			}
		}
	})
}
