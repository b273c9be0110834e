package proxy

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

func TestCheckHost(t *testing.T) {
	for _, tc := range []struct {
		host string
		bind bool
		ok   bool
	}{
		{"localhost", false, true},
		{"login1", false, true},
		{"db.lab.example.edu.", false, true},
		{"_service.example.edu", false, true},
		{"127.0.0.1", false, true},
		{"::1", false, true},
		{"[::1]", false, true},
		{"fe80::1%eth0", false, true},
		{"xn--bcher-kva.example", false, true},
		{"", false, false},
		{"", true, true},
		{"*", true, true},
		{"*", false, false},
		{"localhost\x00.evil", false, false},
		{"localhost\n", false, false},
		{"local\rhost", false, false},
		{"host\tname", false, false},
		{"with space", false, false},
		{"\x1b[31mred", false, false},
		{"bücher.example", false, false},
		{"a..b", false, false},
		{".", false, false},
		{"-leading", false, false},
		{"under_score-ok", false, true},
		{"semi;colon", false, false},
		{"[127.0.0.1]", false, false},
		{"[::1", false, false},
		{strings.Repeat("a", 64) + ".example", false, false},
		{strings.Repeat("a.", 128) + "b", false, false},
	} {
		err := checkHost(tc.host, tc.bind)
		if (err == nil) != tc.ok {
			t.Errorf("checkHost(%q, bind %v) = %v, want ok %v", tc.host, tc.bind, err, tc.ok)
		}
		if err != nil && !errors.Is(err, errBadDestination) {
			t.Errorf("checkHost(%q): %v does not wrap errBadDestination", tc.host, err)
		}
	}
}

func TestCheckChannelAndGlobal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		typ     string
		payload []byte
		global  bool
		ok      bool
	}{
		{"-L to the node", chanDirectTCPIP, ssh.Marshal(tcpipOpen{"localhost", 8888, "127.0.0.1", 50000}), false, true},
		{"-D with an empty originator", chanDirectTCPIP, ssh.Marshal(tcpipOpen{"example.org", 443, "", 0}), false, true},
		{"NUL in the host", chanDirectTCPIP, ssh.Marshal(tcpipOpen{"localhost\x00evil", 22, "127.0.0.1", 1}), false, false},
		{"CR LF in the host", chanDirectTCPIP, ssh.Marshal(tcpipOpen{"localhost\r\nINJECTED", 22, "127.0.0.1", 1}), false, false},
		{"port 0", chanDirectTCPIP, ssh.Marshal(tcpipOpen{"localhost", 0, "127.0.0.1", 1}), false, false},
		{"port 65536", chanDirectTCPIP, ssh.Marshal(tcpipOpen{"localhost", 65536, "127.0.0.1", 1}), false, false},
		{"control characters in the originator", chanDirectTCPIP, ssh.Marshal(tcpipOpen{"localhost", 22, "1.2.3.4\x1b[2J", 1}), false, false},
		{"trailing bytes", chanDirectTCPIP, append(ssh.Marshal(tcpipOpen{"localhost", 22, "127.0.0.1", 1}), 0), false, false},
		{"truncated", chanDirectTCPIP, []byte{0, 0, 0, 9, 'l'}, false, false},
		{"socket", chanDirectStream, ssh.Marshal(directStreamOpen{"/run/user/1000/docker.sock", "", 0}), false, true},
		{"relative socket", chanDirectStream, ssh.Marshal(directStreamOpen{"app.sock", "", 0}), false, true},
		{"NUL in a socket path", chanDirectStream, ssh.Marshal(directStreamOpen{"/tmp/a\x00b", "", 0}), false, false},
		{"abstract socket", chanDirectStream, ssh.Marshal(directStreamOpen{"\x00abstract", "", 0}), false, false},
		{"newline in a socket path", chanDirectStream, ssh.Marshal(directStreamOpen{"/tmp/a\nb", "", 0}), false, false},
		{"empty socket path", chanDirectStream, ssh.Marshal(directStreamOpen{"", "", 0}), false, false},
		{"socket path too long", chanDirectStream, ssh.Marshal(directStreamOpen{"/" + strings.Repeat("a", 200), "", 0}), false, false},
		{"forwarded-tcpip from the node", chanForwardedTCPIP, ssh.Marshal(tcpipOpen{"", 8080, "10.0.0.5", 40000}), false, true},
		{"forwarded-tcpip with a NUL", chanForwardedTCPIP, ssh.Marshal(tcpipOpen{"localhost\x00", 8080, "10.0.0.5", 40000}), false, false},
		{"forwarded-streamlocal", chanForwardedStream, ssh.Marshal(forwardedStreamOpen{"/tmp/s", ""}), false, true},
		{"a session is not a forward", chanSession, nil, false, true},
		{"-R on every address", reqTCPIPForward, ssh.Marshal(tcpipForward{"", 8080}), true, true},
		{"-R localhost, any port", reqTCPIPForward, ssh.Marshal(tcpipForward{"localhost", 0}), true, true},
		{"-R with a NUL", reqTCPIPForward, ssh.Marshal(tcpipForward{"0.0.0.0\x00", 8080}), true, false},
		{"cancel -R with a newline", reqCancelTCPIP, ssh.Marshal(tcpipForward{"localhost\n", 8080}), true, false},
		{"-R port 70000", reqTCPIPForward, ssh.Marshal(tcpipForward{"localhost", 70000}), true, false},
		{"-R to a socket", reqStreamForward, ssh.Marshal(streamForward{"/tmp/gpg.sock"}), true, true},
		{"-R to a socket with a NUL", reqStreamForward, ssh.Marshal(streamForward{"/tmp/x\x00"}), true, false},
		{"cancel a socket with a control character", reqCancelStream, ssh.Marshal(streamForward{"/tmp/\x07"}), true, false},
		{"keepalive is not a forward", reqKeepalive, []byte("anything"), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.global {
				err = checkGlobal(tc.typ, tc.payload)
			} else {
				err = checkChannel(tc.typ, tc.payload)
			}
			if (err == nil) != tc.ok {
				t.Fatalf("%s %q: %v, want ok %v", tc.typ, tc.payload, err, tc.ok)
			}
		})
	}
}

// noControl reports whether s has no control characters.
func noControl(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == 0x7f {
			return false
		}
	}
	return true
}

func FuzzCheckChannel(f *testing.F) {
	f.Add(chanDirectTCPIP, ssh.Marshal(tcpipOpen{"localhost", 8080, "127.0.0.1", 5000}))
	f.Add(chanDirectTCPIP, ssh.Marshal(tcpipOpen{"a\x00b", 1, "", 0}))
	f.Add(chanDirectStream, ssh.Marshal(directStreamOpen{"/tmp/s", "", 0}))
	f.Add(chanForwardedTCPIP, ssh.Marshal(tcpipOpen{"", 1, "10.0.0.1", 2}))
	f.Add(chanForwardedStream, ssh.Marshal(forwardedStreamOpen{"/x", ""}))
	f.Fuzz(func(t *testing.T, typ string, extra []byte) {
		if checkChannel(typ, extra) != nil {
			return
		}
		switch typ {
		case chanDirectTCPIP, chanForwardedTCPIP:
			var m tcpipOpen
			if ssh.Unmarshal(extra, &m) != nil || !noControl(m.Host) || !noControl(m.OriginHost) || m.Port > 65535 {
				t.Fatalf("accepted %s %q", typ, extra)
			}
		case chanDirectStream:
			var m directStreamOpen
			if ssh.Unmarshal(extra, &m) != nil || m.Path == "" || !noControl(m.Path) {
				t.Fatalf("accepted %s %q", typ, extra)
			}
		}
	})
}

func FuzzCheckGlobal(f *testing.F) {
	f.Add(reqTCPIPForward, ssh.Marshal(tcpipForward{"localhost", 8080}))
	f.Add(reqCancelTCPIP, ssh.Marshal(tcpipForward{"", 0}))
	f.Add(reqStreamForward, ssh.Marshal(streamForward{"/tmp/s"}))
	f.Add(reqCancelStream, []byte{0, 0, 0, 1, 0})
	f.Fuzz(func(t *testing.T, typ string, payload []byte) {
		if checkGlobal(typ, payload) != nil {
			return
		}
		switch typ {
		case reqTCPIPForward, reqCancelTCPIP:
			var m tcpipForward
			if ssh.Unmarshal(payload, &m) != nil || !noControl(m.Addr) || m.Port > 65535 {
				t.Fatalf("accepted %s %q", typ, payload)
			}
		case reqStreamForward, reqCancelStream:
			var m streamForward
			if ssh.Unmarshal(payload, &m) != nil || m.Path == "" || !noControl(m.Path) {
				t.Fatalf("accepted %s %q", typ, payload)
			}
		}
	})
}
