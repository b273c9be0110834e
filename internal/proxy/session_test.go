package proxy

import (
	"testing"

	"golang.org/x/crypto/ssh"
)

func TestLocalDestinations(t *testing.T) {
	allow := LocalDestinations("login1", "10.0.1.11")
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST.": true, "db.localhost": true, "127.0.0.1": true, "127.8.9.10": true,
		"::1": true, "[::1]": true, "::ffff:127.0.0.1": true, "login1": true, "Login1": true, "10.0.1.11": true,
		"10.0.1.12": false, "login2": false, "169.254.169.254": false, "0.0.0.0": false, "": false,
		"localhost.evil.com": false, "127.0.0.1.nip.io": false,
	} {
		if got := allow(host, 22); got != want {
			t.Errorf("allow(%q) = %v, want %v", host, got, want)
		}
	}
}

func FuzzMayDirect(f *testing.F) {
	f.Add(ssh.Marshal(tcpipOpen{Host: "localhost", Port: 8080, OriginHost: "127.0.0.1", OriginPort: 5000}))
	f.Add([]byte{0, 0, 0, 9, 'l'})
	r := &Relay{AllowDirect: LocalDestinations("n1")}
	f.Fuzz(func(t *testing.T, extra []byte) {
		dest, ok := r.mayDirect(extra)
		var d tcpipOpen
		if ssh.Unmarshal(extra, &d) != nil && ok {
			t.Fatalf("malformed payload allowed: %q", dest)
		}
		if ok && !LocalDestinations("n1")(d.Host, d.Port) {
			t.Fatalf("allowed %q", d.Host)
		}
	})
}
