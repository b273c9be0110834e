package slurm

import (
	"errors"
	"strings"
	"testing"
)

// stateBuilder builds a State by hand, the way Client.State would read it.
type stateBuilder struct{ st State }

func newState() *stateBuilder {
	b := &stateBuilder{st: State{Cluster: "c1", Accounts: map[string]AccountState{}, QOS: map[string]QOSState{}, Users: map[string]UserState{}}}
	b.st.Accounts["root"] = AccountState{Name: "root", Description: "default root account", InCluster: true, GrpTRES: TRES{}}
	b.st.QOS["normal"] = QOSState{Name: "normal", Description: "Normal QOS default", MaxTRESPerUser: TRES{}}
	return b
}

func (b *stateBuilder) account(name, parent string, managed bool, desc string, grp TRES) *stateBuilder {
	if grp == nil {
		grp = TRES{}
	}
	b.st.Accounts[name] = AccountState{Name: name, Parent: parent, Managed: managed, Description: desc, GrpTRES: grp, InCluster: true}
	return b
}

func (b *stateBuilder) qos(name string, managed bool, lim TRES, deny bool) *stateBuilder {
	if lim == nil {
		lim = TRES{}
	}
	b.st.QOS[name] = QOSState{Name: name, Managed: managed, MaxTRESPerUser: lim, DenyOnLimit: deny}
	return b
}

func (b *stateBuilder) assoc(user, defAccount, account, partition string, qos []string, defQOS string) *stateBuilder {
	u, ok := b.st.Users[user]
	if !ok {
		u = UserState{Name: user, DefaultAccount: defAccount, Assocs: map[AssocKey]AssocState{}}
	}
	k := AssocKey{Account: account, Partition: partition}
	u.Assocs[k] = AssocState{AssocKey: k, QOS: qos, DefaultQOS: defQOS}
	b.st.Users[user] = u
	return b
}

func (b *stateBuilder) get() State { return b.st }

// inSync is the state labDesired produces.
func inSync() *stateBuilder {
	return newState().
		account("frontdoor", "root", true, "parent of the accounts frontdoor manages", nil).
		account("lab", "frontdoor", true, "nlp lab", TRES{"gres/gpu": 8, "gres/gpu:h100": 8}).
		account("course", "frontdoor", true, "", nil).
		qos("lab-user", true, TRES{"gres/gpu": 2}, false).
		assoc("alice", "lab", "lab", "", []string{"lab-user"}, "lab-user").
		assoc("alice", "lab", "lab", "h100", []string{"lab-user"}, "lab-user").
		assoc("bob", "course", "course", "", []string{"normal"}, "")
}

func labDesired() Desired {
	return Desired{
		Accounts: []Account{
			{Name: "lab", Description: "NLP lab", GPULimit: 8, GPUByType: map[string]int{"h100": 8}},
			{Name: "course"},
		},
		QOS: []QOS{{Name: "lab-user", MaxGPUPerUser: 2}},
		Users: []User{
			{Name: "alice", Assocs: []Assoc{{Account: "lab", Partitions: []string{"", "h100"}[1:], QOS: []string{"lab-user"}, DefaultQOS: "lab-user"}}},
			{Name: "bob", Assocs: []Assoc{{Account: "course", QOS: []string{"normal"}}}},
		},
	}
}

func TestPlan(t *testing.T) {
	// alice's lab association in inSync covers both "" and h100; the
	// desired one only h100, so build the matching state per case.
	synced := func() *stateBuilder {
		b := inSync()
		delete(b.st.Users["alice"].Assocs, AssocKey{Account: "lab"})
		return b
	}
	tests := []struct {
		name    string
		desired func() Desired
		current State
		want    []string // diff lines, in order
	}{
		{
			name:    "empty database",
			desired: labDesired,
			current: newState().get(),
			want: []string{
				"+ account frontdoor parent=root",
				"+ qos lab-user MaxTRESPerUser=gres/gpu=2",
				"+ account course parent=frontdoor",
				"+ account lab parent=frontdoor GrpTRES=gres/gpu=8,gres/gpu:h100=8",
				"+ user alice account=lab partition=h100 QOS=lab-user DefaultQOS=lab-user",
				"+ user bob account=course QOS=normal",
			},
		},
		{
			name:    "in sync",
			desired: labDesired,
			current: synced().get(),
		},
		{
			name: "limits changed",
			desired: func() Desired {
				d := labDesired()
				d.Accounts[0].GPULimit, d.Accounts[0].GPUByType = 4, nil
				d.QOS[0].MaxGPUPerUser, d.QOS[0].DenyOnLimit = 4, true
				return d
			},
			current: synced().get(),
			want: []string{
				"~ qos lab-user MaxTRESPerUser gres/gpu=2 -> gres/gpu=4, DenyOnLimit off -> on",
				"~ account lab GrpTRES gres/gpu=8,gres/gpu:h100=8 -> gres/gpu=4",
			},
		},
		{
			name: "user left the group: association and user record go",
			desired: func() Desired {
				d := labDesired()
				d.Users = d.Users[:1]
				return d
			},
			current: synced().get(),
			want:    []string{"- user bob"},
		},
		{
			name: "user left, keeps a hand-made association",
			desired: func() Desired {
				d := labDesired()
				d.Users = d.Users[:1]
				return d
			},
			current: synced().account("physics", "root", false, "by hand", nil).
				assoc("bob", "course", "physics", "", nil, "").get(),
			want: []string{
				"~ user bob DefaultAccount course -> physics",
				"- user bob account=course",
			},
		},
		{
			name: "partition list changed",
			desired: func() Desired {
				d := labDesired()
				d.Users[0].Assocs[0].Partitions = []string{"general"}
				return d
			},
			current: synced().get(),
			want: []string{
				"+ user alice account=lab partition=general QOS=lab-user DefaultQOS=lab-user",
				"- user alice account=lab partition=h100",
			},
		},
		{
			name: "QOS list and default changed",
			desired: func() Desired {
				d := labDesired()
				d.Users[1].Assocs[0].QOS = []string{"normal", "lab-user"}
				d.Users[1].Assocs[0].DefaultQOS = "lab-user"
				return d
			},
			current: synced().get(),
			want:    []string{"~ user bob account=course QOS normal -> lab-user,normal, DefaultQOS none -> lab-user"},
		},
		{
			name: "account and QOS no longer in the policy",
			desired: func() Desired {
				d := labDesired()
				d.Accounts = d.Accounts[:1]
				d.Users = d.Users[:1]
				d.QOS = nil
				d.Users[0].Assocs[0].QOS, d.Users[0].Assocs[0].DefaultQOS = nil, ""
				return d
			},
			current: synced().get(),
			want:    []string{"- user bob", "- account course", "- qos lab-user"},
		},
		{
			name: "unmanaged account with our name: reported, left alone with its users",
			desired: func() Desired {
				d := labDesired()
				d.Users = append(d.Users, User{Name: "carol", Assocs: []Assoc{{Account: "course"}}})
				return d
			},
			current: synced().account("course", "root", false, "by hand", TRES{"gres/gpu": 1}).get(),
			want: []string{
				`! account course exists and is not managed by frontdoor (description "by hand"); neither it nor its users are changed`,
			},
		},
		{
			name:    "unmanaged accounts, QOS and users not in the policy are invisible",
			desired: labDesired,
			current: synced().account("physics", "root", false, "by hand", TRES{"gres/gpu": 1}).
				qos("physics-q", false, TRES{"gres/gpu": 1}, true).
				assoc("dave", "physics", "physics", "", []string{"physics-q"}, "physics-q").
				// A managed-looking user name in an unmanaged account.
				assoc("alice", "lab", "physics", "", nil, "").get(),
		},
		{
			name: "unmanaged QOS with our name: limits not changed, still usable",
			desired: func() Desired {
				d := labDesired()
				d.QOS[0].MaxGPUPerUser = 1
				return d
			},
			current: synced().qos("lab-user", false, TRES{"gres/gpu": 2}, false).get(),
			want:    []string{`! qos lab-user exists and is not managed by frontdoor (description ""); its limits are left as they are`},
		},
		{
			name: "QOS that does not exist",
			desired: func() Desired {
				d := labDesired()
				d.Users[1].Assocs[0].QOS = []string{"gold"}
				return d
			},
			current: synced().get(),
			want:    []string{"! user bob account=course: QOS gold does not exist and is not managed; association left out", "- user bob"},
		},
		{
			name: "new user's default account first",
			desired: func() Desired {
				d := labDesired()
				d.Users = append(d.Users, User{Name: "erin", DefaultAccount: "lab", Assocs: []Assoc{{Account: "course"}, {Account: "lab"}}})
				return d
			},
			current: synced().get(),
			want:    []string{"+ user erin account=lab", "+ user erin account=course"},
		},
		{
			name: "default account set to the policy's unless a human chose an unmanaged one",
			desired: func() Desired {
				d := labDesired()
				d.Users[1].Assocs = append(d.Users[1].Assocs, Assoc{Account: "lab"})
				d.Users[1].DefaultAccount = "lab"
				return d
			},
			current: synced().get(),
			want:    []string{"+ user bob account=lab", "~ user bob DefaultAccount course -> lab"},
		},
		{
			name: "parent moved",
			desired: func() Desired {
				d := labDesired()
				d.Parent = "fd"
				return d
			},
			current: synced().get(),
			want: []string{
				"+ account fd parent=root",
				"~ account course parent frontdoor -> fd",
				"~ account lab parent frontdoor -> fd",
				// The old parent is managed and empty now.
				"- account frontdoor",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.desired()
			if err := d.Validate(); err != nil {
				t.Fatal(err)
			}
			got := Plan(d, tt.current)
			var lines []string
			for _, c := range got {
				lines = append(lines, c.String())
				if (c.Op == OpConflict) != (c.Args == nil) {
					t.Errorf("%s: args %v", c, c.Args)
				}
			}
			if strings.Join(lines, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(tt.want, "\n"))
			}
			// Deterministic: maps never leak their order.
			for i := 0; i < 20; i++ {
				if again := Diff(Plan(d, tt.current), true); again != Diff(got, true) {
					t.Fatalf("plan differs between calls:\n%s\nvs\n%s", again, Diff(got, true))
				}
			}
		})
	}
}

// TestPlanArgs pins the exact sacctmgr commands of the kinds of change.
func TestPlanArgs(t *testing.T) {
	d := labDesired()
	d.Users[0].Assocs[0].Partitions = nil
	got := Plan(d, newState().get())
	want := []string{
		"sacctmgr -i add account frontdoor cluster=c1 parent=root 'Description=frontdoor: parent of the accounts frontdoor manages' Organization=frontdoor",
		"sacctmgr -i add qos lab-user 'Description=frontdoor: managed by frontdoor' MaxTRESPerUser=gres/gpu=2",
		"sacctmgr -i add account course cluster=c1 parent=frontdoor 'Description=frontdoor: managed by frontdoor' Organization=frontdoor",
		"sacctmgr -i add account lab cluster=c1 parent=frontdoor 'Description=frontdoor: NLP lab' Organization=frontdoor GrpTRES=gres/gpu=8,gres/gpu:h100=8",
		"sacctmgr -i add user alice account=lab cluster=c1 QOS=lab-user DefaultQOS=lab-user DefaultAccount=lab",
		"sacctmgr -i add user bob account=course cluster=c1 QOS=normal DefaultAccount=course",
	}
	var cmds []string
	for _, c := range got {
		cmds = append(cmds, c.Command())
	}
	if strings.Join(cmds, "\n") != strings.Join(want, "\n") {
		t.Errorf("commands:\n%s\nwant:\n%s", strings.Join(cmds, "\n"), strings.Join(want, "\n"))
	}

	cur := newState().account("frontdoor", "root", true, "", nil).
		account("lab", "frontdoor", true, "nlp lab", TRES{"gres/gpu": 8, "cpu": 64}).
		qos("q", true, TRES{"gres/gpu:h100": 1}, true).
		assoc("alice", "lab", "lab", "", []string{"q"}, "q").
		assoc("alice", "lab", "lab", "h100", []string{"q"}, "q").get()
	d = Desired{
		Accounts: []Account{{Name: "lab", Description: "NLP lab", GPULimit: 4}},
		QOS:      []QOS{{Name: "q", MaxGPUPerUser: 1}},
		Users:    []User{{Name: "alice", Assocs: []Assoc{{Account: "lab", Partitions: []string{"h100"}, QOS: []string{"normal", "q"}}}}},
	}
	// A user whose last association goes is deleted without a cluster
	// condition: slurmdbd 22.05 refuses the per-cluster form once the
	// default account's associations would all go.
	gone := Plan(Desired{Accounts: []Account{{Name: "lab"}}}, newState().account("frontdoor", "root", true, "", nil).
		account("lab", "frontdoor", true, "", nil).assoc("bob", "lab", "lab", "", nil, "").assoc("bob", "lab", "lab", "h100", nil, "").get())
	if len(gone) != 1 || gone[0].Command() != "sacctmgr -i delete user where name=bob" {
		t.Errorf("removing a user: %s", Diff(gone, true))
	}

	want = []string{
		"sacctmgr -i modify qos where name=q set MaxTRESPerUser=gres/gpu=1,gres/gpu:h100=-1 Flags-=DenyOnLimit",
		"sacctmgr -i modify account where name=lab cluster=c1 set GrpTRES=cpu=-1,gres/gpu=4",
		"sacctmgr -i modify user where name=alice account=lab partition=h100 cluster=c1 set QOS=normal,q",
		"sacctmgr -i delete user where name=alice account=lab partition= cluster=c1",
	}
	cmds = nil
	for _, c := range Plan(d, cur) {
		cmds = append(cmds, c.Command())
	}
	if strings.Join(cmds, "\n") != strings.Join(want, "\n") {
		t.Errorf("commands:\n%s\nwant:\n%s", strings.Join(cmds, "\n"), strings.Join(want, "\n"))
	}
}

func TestValidate(t *testing.T) {
	ok := labDesired()
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid desired rejected: %v", err)
	}
	tests := []struct {
		name   string
		change func(*Desired)
		want   string
	}{
		{"space in account", func(d *Desired) { d.Accounts[0].Name = "my lab" }, `account name "my lab"`},
		{"comma in user", func(d *Desired) { d.Users[0].Name = "a,b" }, `user name "a,b"`},
		{"equals in QOS", func(d *Desired) { d.QOS[0].Name = "q=1" }, `QOS name "q=1"`},
		{"quote in partition", func(d *Desired) { d.Users[0].Assocs[0].Partitions = []string{`h"`} }, `partition name`},
		{"upper case", func(d *Desired) { d.Users[0].Name = "Alice" }, `user name "Alice"`},
		{"pipe in description", func(d *Desired) { d.Accounts[0].Description = "a|b" }, "description"},
		{"unknown account", func(d *Desired) { d.Users[0].Assocs[0].Account = "nope" }, `account "nope" is not one of`},
		{"default QOS not listed", func(d *Desired) { d.Users[0].Assocs[0].DefaultQOS = "normal" }, "default QOS"},
		{"default account without association", func(d *Desired) { d.Users[0].DefaultAccount = "course" }, "default account"},
		{"negative limit", func(d *Desired) { d.Accounts[0].GPULimit = -1 }, "negative"},
		{"bad GPU type", func(d *Desired) { d.QOS[0].MaxGPUPerUserByType = map[string]int{"H 100": 1} }, "GPU type"},
		{"duplicate user", func(d *Desired) { d.Users[1] = d.Users[0] }, "listed twice"},
		{"root parent", func(d *Desired) { d.Parent = "root" }, "root"},
		{"account named like the parent", func(d *Desired) { d.Accounts[1].Name = "frontdoor" }, "reserved"},
		{"no associations", func(d *Desired) { d.Users[0].Assocs = nil }, "no associations"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := labDesired()
			tt.change(&d)
			err := d.Validate()
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want an ErrInvalid naming %q", err, tt.want)
			}
		})
	}
}
