package gctune

import "testing"

func TestPercent(t *testing.T) {
	c := Config{MinGoal: 64 << 20, MaxPercent: 2000}
	for _, tt := range []struct {
		live uint64
		want int
	}{
		{0, 2000},
		{1 << 20, 2000}, // 64 MiB / 1 MiB = 6400 %, capped
		{8 << 20, 800},  // 64 MiB headroom on 8 MiB live
		{64 << 20, 100}, // large heaps: back to the default
		{1 << 30, 100},  // never below 100
		{32 << 20, 200},
	} {
		if got := c.Percent(tt.live); got != tt.want {
			t.Errorf("Percent(%d MiB) = %d, want %d", tt.live>>20, got, tt.want)
		}
	}
}
