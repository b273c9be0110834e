package gateway

import (
	"testing"
	"time"
)

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		12 * time.Hour: "12h", 90 * time.Minute: "1h30m", 4 * time.Second: "4s", 10 * time.Minute: "10m", time.Hour + time.Second: "1h0m1s",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
