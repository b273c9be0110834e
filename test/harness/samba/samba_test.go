package samba

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"
)

// TestDC provisions a DC and checks what the directory tests rely on: users,
// nested groups, keys in both attributes, account-state attributes, and the
// process control (pause, kill, restart, stop leaves no process behind).
func TestDC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	dir := t.TempDir()
	dc, err := Start(ctx, Options{Dir: dir, Addr: "127.0.2.9"})
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()
	t.Logf("provisioned and started in %v", time.Since(start))

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(dc.CreateGroup(ctx, "gpu-users"))
	must(dc.CreateGroup(ctx, "nlp-lab", "gpu-users"))
	alice, err := dc.CreateUser(ctx, "alice", "Al1ce-Passw0rd!", "nlp-lab")
	must(err)
	must(dc.SetSSHKey(ctx, "alice", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice"))
	must(dc.ExpirePassword(ctx, "alice"))

	// stack.json hands admin_url and admin_principal to people who paste
	// them into samba-tool: they must work exactly as given, from a
	// machine whose own /etc/samba knows nothing of this domain.
	out, err := exec.CommandContext(ctx, "samba-tool", "group", "listmembers", "nlp-lab",
		"-H", dc.AdminURL(), "-U", dc.AdminPrincipal(), "--password="+dc.AdminPassword()).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "alice") {
		t.Errorf("samba-tool -H %s -U %s: %v: %s", dc.AdminURL(), dc.AdminPrincipal(), err, out)
	}

	conn, err := dc.Dial(ctx)
	must(err)
	defer conn.Close()
	must(conn.Bind(dc.AdminDN(), dc.AdminPassword()))
	res, err := conn.Search(ldap.NewSearchRequest(dc.BaseDN(), ldap.ScopeWholeSubtree, ldap.NeverDerefAliases, 0, 0, false,
		"(sAMAccountName=alice)", []string{"sshPublicKey", "altSecurityIdentities", "uidNumber", "msDS-User-Account-Control-Computed", "userPrincipalName"}, nil))
	must(err)
	if len(res.Entries) != 1 {
		t.Fatalf("entries = %d", len(res.Entries))
	}
	e := res.Entries[0]
	t.Logf("dn=%s upn=%s uid=%s computed=%s", e.DN, e.GetAttributeValue("userPrincipalName"), e.GetAttributeValue("uidNumber"), e.GetAttributeValue("msDS-User-Account-Control-Computed"))
	if e.DN != alice.DN || e.GetAttributeValue("uidNumber") != strconv.Itoa(alice.UID) || e.GetAttributeValue("sshPublicKey") == "" || e.GetAttributeValue("altSecurityIdentities") == "" {
		t.Errorf("unexpected entry %+v", e)
	}
	if c, _ := strconv.Atoi(e.GetAttributeValue("msDS-User-Account-Control-Computed")); c&0x800000 == 0 {
		t.Errorf("password expired not computed: %d", c)
	}
	res, err = conn.Search(ldap.NewSearchRequest(dc.BaseDN(), ldap.ScopeWholeSubtree, ldap.NeverDerefAliases, 0, 0, false,
		"(member:1.2.840.113556.1.4.1941:="+ldap.EscapeFilter(alice.DN)+")", []string{"sAMAccountName"}, nil))
	must(err)
	if len(res.Entries) != 2 {
		t.Errorf("nested groups: %d entries", len(res.Entries))
	}

	// Pause: connections are accepted but never answered.
	must(dc.Pause())
	c, err := net.DialTimeout("tcp", net.JoinHostPort(dc.Addr(), "636"), time.Second)
	must(err)
	_ = c.SetDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("paused DC answered")
	}
	c.Close()
	must(dc.Resume())

	pid := dc.PID()
	dc.Kill()
	if _, err := net.DialTimeout("tcp", net.JoinHostPort(dc.Addr(), "636"), time.Second); err == nil {
		t.Error("killed DC still accepts connections")
	}
	start = time.Now()
	must(dc.Restart(ctx))
	t.Logf("restarted in %v", time.Since(start))
	dc.Stop()
	if err := exec.Command("pgrep", "-g", strconv.Itoa(pid)).Run(); err == nil {
		t.Error("processes left after Stop")
	} else if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) {
		t.Log(err)
	}

	// Start on an existing provision reuses it (the local stack restarts
	// fast) and keeps handing out fresh uidNumbers.
	start = time.Now()
	dc2, err := Start(ctx, Options{Dir: dir, Addr: "127.0.2.9"})
	must(err)
	defer dc2.Close()
	t.Logf("reused provision started in %v", time.Since(start))
	bob, err := dc2.CreateUser(ctx, "bob", "B0b-Passw0rd!", "gpu-users")
	must(err)
	if bob.UID != alice.UID+1 {
		t.Errorf("bob's uid %d, alice's %d", bob.UID, alice.UID)
	}
}
