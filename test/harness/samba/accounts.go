package samba

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/go-ldap/ldap/v3"
)

// Accounts are managed over LDAPS as Administrator, the way an AD admin tool
// does it: a few milliseconds per change instead of a second per samba-tool
// run. They therefore need a running (not paused) DC.

// User describes an account created by CreateUser.
type User struct {
	Name string // sAMAccountName
	DN   string
	UPN  string // name@realm (lower case)
	UID  int    // uidNumber
	GID  int    // gidNumber
}

// GID is the gidNumber every user created by CreateUser gets.
const GID = 20000

// userAccountControl bits.
const (
	uacAccountDisable = 0x2
	uacNormalAccount  = 0x200
)

// admin returns an LDAPS connection bound as Administrator.
func (dc *DC) admin(ctx context.Context) (*ldap.Conn, error) {
	// A loaded DC may time a handshake out: try a few times.
	var conn *ldap.Conn
	var err error
	for try := 0; try < 3; try++ {
		if conn, err = dc.Dial(ctx); err == nil || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("samba: connect: %w", err)
	}
	if err := conn.Bind(dc.AdminDN(), dc.opts.AdminPassword); err != nil {
		conn.Close()
		return nil, fmt.Errorf("samba: admin bind: %w", err)
	}
	return conn, nil
}

func (dc *DC) withAdmin(ctx context.Context, fn func(*ldap.Conn) error) error {
	conn, err := dc.admin(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return fn(conn)
}

// unicodePwd is how AD takes a password: the quoted string in UTF-16LE.
func unicodePwd(password string) string {
	u := utf16.Encode([]rune(`"` + password + `"`))
	b := make([]byte, 2*len(u))
	for i, r := range u {
		binary.LittleEndian.PutUint16(b[2*i:], r)
	}
	return string(b)
}

// CreateUser creates an enabled user with the password, a uidNumber (from
// 20001 up), gidNumber GID, loginShell /bin/bash and home /home/name, and
// adds it to the groups (which must exist). The DN is CN=name,CN=Users,BaseDN
// and the UPN name@realm.
func (dc *DC) CreateUser(ctx context.Context, name, password string, groups ...string) (User, error) {
	dc.mu.Lock()
	uid := dc.nextID
	dc.nextID++
	dc.mu.Unlock()
	u := User{
		Name: name,
		DN:   "CN=" + ldap.EscapeDN(name) + ",CN=Users," + dc.baseDN,
		UPN:  strings.ToLower(name + "@" + dc.opts.Realm),
		UID:  uid,
		GID:  GID,
	}
	err := dc.withAdmin(ctx, func(c *ldap.Conn) error {
		add := ldap.NewAddRequest(u.DN, nil)
		add.Attribute("objectClass", []string{"top", "person", "organizationalPerson", "user"})
		add.Attribute("sAMAccountName", []string{name})
		add.Attribute("userPrincipalName", []string{u.UPN})
		add.Attribute("uidNumber", []string{strconv.Itoa(uid)})
		add.Attribute("gidNumber", []string{strconv.Itoa(GID)})
		add.Attribute("loginShell", []string{"/bin/bash"})
		add.Attribute("unixHomeDirectory", []string{"/home/" + name})
		add.Attribute("unicodePwd", []string{unicodePwd(password)})
		add.Attribute("userAccountControl", []string{strconv.Itoa(uacNormalAccount)})
		if err := c.Add(add); err != nil {
			return fmt.Errorf("samba: create user %s: %w", name, err)
		}
		for _, g := range groups {
			if err := addMember(c, dc.baseDN, g, u.DN); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return User{}, err
	}
	return u, nil
}

// CreateGroup creates a global security group CN=name,CN=Users,BaseDN and
// makes it a member of each group in memberOf (nested groups: a user in name
// is then also, transitively, in memberOf).
func (dc *DC) CreateGroup(ctx context.Context, name string, memberOf ...string) error {
	return dc.withAdmin(ctx, func(c *ldap.Conn) error {
		dn := "CN=" + ldap.EscapeDN(name) + ",CN=Users," + dc.baseDN
		add := ldap.NewAddRequest(dn, nil)
		add.Attribute("objectClass", []string{"top", "group"})
		add.Attribute("sAMAccountName", []string{name})
		if err := c.Add(add); err != nil {
			return fmt.Errorf("samba: create group %s: %w", name, err)
		}
		for _, parent := range memberOf {
			if err := addMember(c, dc.baseDN, parent, dn); err != nil {
				return err
			}
		}
		return nil
	})
}

// AddMember adds a user or group (by sAMAccountName) to a group.
func (dc *DC) AddMember(ctx context.Context, group, member string) error {
	return dc.withAdmin(ctx, func(c *ldap.Conn) error {
		dn, err := findDN(c, dc.baseDN, member)
		if err != nil {
			return err
		}
		return addMember(c, dc.baseDN, group, dn)
	})
}

// RemoveMember removes a user or group from a group.
func (dc *DC) RemoveMember(ctx context.Context, group, member string) error {
	return dc.withAdmin(ctx, func(c *ldap.Conn) error {
		gdn, err := findDN(c, dc.baseDN, group)
		if err != nil {
			return err
		}
		mdn, err := findDN(c, dc.baseDN, member)
		if err != nil {
			return err
		}
		m := ldap.NewModifyRequest(gdn, nil)
		m.Delete("member", []string{mdn})
		return c.Modify(m)
	})
}

func addMember(c *ldap.Conn, base, group, memberDN string) error {
	gdn, err := findDN(c, base, group)
	if err != nil {
		return err
	}
	m := ldap.NewModifyRequest(gdn, nil)
	m.Add("member", []string{memberDN})
	if err := c.Modify(m); err != nil {
		return fmt.Errorf("samba: add member to %s: %w", group, err)
	}
	return nil
}

// findDN finds a user's or group's DN by sAMAccountName.
func findDN(c *ldap.Conn, base, name string) (string, error) {
	res, err := c.Search(ldap.NewSearchRequest(base, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases, 2, 10, false,
		"(sAMAccountName="+ldap.EscapeFilter(name)+")", []string{"dn"}, nil))
	if err != nil {
		return "", fmt.Errorf("samba: find %s: %w", name, err)
	}
	if len(res.Entries) != 1 {
		return "", fmt.Errorf("samba: %d entries named %q", len(res.Entries), name)
	}
	return res.Entries[0].DN, nil
}

// modify replaces attributes of the account name (values nil deletes).
func (dc *DC) modify(ctx context.Context, name string, attrs map[string][]string) error {
	return dc.withAdmin(ctx, func(c *ldap.Conn) error {
		dn, err := findDN(c, dc.baseDN, name)
		if err != nil {
			return err
		}
		m := ldap.NewModifyRequest(dn, nil)
		for k, v := range attrs {
			m.Replace(k, v)
		}
		if err := c.Modify(m); err != nil {
			return fmt.Errorf("samba: modify %s: %w", name, err)
		}
		return nil
	})
}

// SetSSHKey replaces the user's SSH keys with the given authorized_keys lines
// in both places frontdoor can read them from: sshPublicKey (OpenSSH-LPK) and
// altSecurityIdentities ("SSHKey:" + line, as AWS's HyperPod guide does).
// No lines removes all keys.
func (dc *DC) SetSSHKey(ctx context.Context, user string, lines ...string) error {
	var lpk, alt []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		lpk = append(lpk, l)
		alt = append(alt, "SSHKey:"+l)
	}
	return dc.modify(ctx, user, map[string][]string{"sshPublicKey": lpk, "altSecurityIdentities": alt})
}

// SetAttribute replaces one attribute of a user or group (no values deletes
// it).
func (dc *DC) SetAttribute(ctx context.Context, name, attr string, values ...string) error {
	return dc.modify(ctx, name, map[string][]string{attr: values})
}

// Disable sets userAccountControl's ACCOUNTDISABLE bit (binds then fail with
// sub-code 533).
func (dc *DC) Disable(ctx context.Context, user string) error {
	return dc.SetAttribute(ctx, user, "userAccountControl", strconv.Itoa(uacNormalAccount|uacAccountDisable))
}

// Enable clears it again.
func (dc *DC) Enable(ctx context.Context, user string) error {
	return dc.SetAttribute(ctx, user, "userAccountControl", strconv.Itoa(uacNormalAccount))
}

// Expire sets accountExpires an hour in the past: AD refuses binds with
// sub-code 701 and frontdoor must refuse key logins.
func (dc *DC) Expire(ctx context.Context, user string) error {
	return dc.SetAttribute(ctx, user, "accountExpires", strconv.FormatInt(FileTime(time.Now().Add(-time.Hour)), 10))
}

// Unexpire makes the account never expire.
func (dc *DC) Unexpire(ctx context.Context, user string) error {
	return dc.SetAttribute(ctx, user, "accountExpires", "9223372036854775807")
}

// ExpirePassword forces "must change password at next logon" (pwdLastSet=0):
// binds fail with 773 and msDS-User-Account-Control-Computed shows
// PASSWORD_EXPIRED.
func (dc *DC) ExpirePassword(ctx context.Context, user string) error {
	return dc.SetAttribute(ctx, user, "pwdLastSet", "0")
}

// SetPassword resets a user's password as the administrator and clears
// "must change" (pwdLastSet=-1 means now).
func (dc *DC) SetPassword(ctx context.Context, user, password string) error {
	return dc.modify(ctx, user, map[string][]string{"unicodePwd": {unicodePwd(password)}, "pwdLastSet": {"-1"}})
}

// LockoutForTest sets the domain's lockout threshold for one test and puts
// it back to 0 (never lock) when the test ends.
func (dc *DC) LockoutForTest(t testing.TB, threshold int, window time.Duration) {
	t.Helper()
	if err := dc.SetLockoutThreshold(t.Context(), threshold, window); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dc.SetLockoutThreshold(context.Background(), 0, window); err != nil {
			t.Errorf("resetting the lockout threshold: %v", err)
		}
	})
}

// SetLockoutThreshold sets the domain's bad-password lockout threshold (0 =
// never lock), the lockout duration and the observation window.
func (dc *DC) SetLockoutThreshold(ctx context.Context, threshold int, window time.Duration) error {
	interval := strconv.FormatInt(-int64(window/100), 10) // negative 100 ns units
	return dc.withAdmin(ctx, func(c *ldap.Conn) error {
		m := ldap.NewModifyRequest(dc.baseDN, nil)
		m.Replace("lockoutThreshold", []string{strconv.Itoa(threshold)})
		m.Replace("lockoutDuration", []string{interval})
		m.Replace("lockOutObservationWindow", []string{interval})
		return c.Modify(m)
	})
}

// Unlock clears a lockout (lockoutTime=0).
func (dc *DC) Unlock(ctx context.Context, user string) error {
	return dc.SetAttribute(ctx, user, "lockoutTime", "0")
}

// DeleteUser removes a user (or group).
func (dc *DC) DeleteUser(ctx context.Context, name string) error {
	return dc.withAdmin(ctx, func(c *ldap.Conn) error {
		dn, err := findDN(c, dc.baseDN, name)
		if err != nil {
			return err
		}
		return c.Del(ldap.NewDelRequest(dn, nil))
	})
}

// FileTime converts t to an AD FILETIME (100 ns intervals since 1601-01-01).
func FileTime(t time.Time) int64 {
	const epochDiff = 116444736000000000 // 1601→1970 in 100 ns
	return t.UnixNano()/100 + epochDiff
}
