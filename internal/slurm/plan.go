package slurm

import (
	"fmt"
	"sort"
	"strings"
)

// How a plan is ordered. Slurm checks references when a command runs, so
// the changes come in dependency order, and that order is the plan's:
//
//  1. conflicts ("!"): never executed, listed first so they are read
//  2. the parent account
//  3. QOS added or changed (associations refer to them)
//  4. accounts added or changed (users hang under them)
//  5. per user, by name: associations added, associations changed, then
//     the default account (it must name an existing association)
//  6. per user, by name: associations removed, or the whole user
//  7. accounts removed (their users are gone by now)
//  8. QOS removed (no association refers to them any more)
//
// Within a step objects are sorted by name, so the same desired and current
// state always give the same plan, line for line.

// Op is what a change does.
type Op byte

const (
	// OpAdd creates an object or association.
	OpAdd Op = '+'
	// OpModify changes settings of an existing one.
	OpModify Op = '~'
	// OpRemove deletes one.
	OpRemove Op = '-'
	// OpConflict reports something Plan leaves alone (an unmanaged object
	// in the way); it has no command.
	OpConflict Op = '!'
)

// Change is one step of a plan: one sacctmgr command.
type Change struct {
	Op Op
	// Kind is "account", "qos" or "user" (associations are users'
	// changes, as in sacctmgr).
	Kind string
	// Name is the account, QOS or user name.
	Name string
	// Detail is the rest of the diff line.
	Detail string
	// Args are sacctmgr's arguments (run as sacctmgr -i Args...); nil
	// for OpConflict.
	Args []string
}

// String is the change as a diff line, for example
// "+ account lab parent=frontdoor GrpTRES=gres/gpu=8",
// "~ qos lab-user MaxTRESPerUser gres/gpu=2 -> gres/gpu=4" or
// "- user bob account=course".
func (c Change) String() string {
	s := fmt.Sprintf("%c %s %s", c.Op, c.Kind, c.Name)
	if c.Detail != "" {
		s += " " + c.Detail
	}
	return s
}

// Command is the sacctmgr command line the change runs, quoted for a
// shell, for a dry run; "" for a conflict.
func (c Change) Command() string {
	if c.Args == nil {
		return ""
	}
	return shellJoin(append([]string{"sacctmgr", "-i"}, c.Args...))
}

// Diff renders changes one per line, each followed by its command when
// verbose.
func Diff(changes []Change, verbose bool) string {
	var b strings.Builder
	for _, c := range changes {
		b.WriteString(c.String())
		b.WriteByte('\n')
		if verbose && c.Args != nil {
			b.WriteString("    " + c.Command() + "\n")
		}
	}
	return b.String()
}

// Pending reports how many changes would run a command (conflicts
// excluded): zero means Slurm already matches.
func Pending(changes []Change) int {
	n := 0
	for _, c := range changes {
		if c.Op != OpConflict {
			n++
		}
	}
	return n
}

// Plan computes the changes that turn current into desired, touching only
// managed objects. desired must be valid (Desired.Validate). It is pure:
// no I/O, and its output depends only on its arguments.
func Plan(desired Desired, current State) []Change {
	p := planner{d: desired, cur: current, parent: desired.parent(), cluster: "cluster=" + current.Cluster}
	p.run()
	var out []Change
	for _, step := range p.steps {
		out = append(out, step...)
	}
	return out
}

const (
	stepConflict = iota
	stepParent
	stepQOS
	stepAccount
	stepUserAdd
	stepUserRemove
	stepAccountRemove
	stepQOSRemove
	nSteps
)

type planner struct {
	d       Desired
	cur     State
	parent  string
	cluster string // "cluster=NAME"
	steps   [nSteps][]Change
	// skipAccount holds desired accounts frontdoor cannot use (an
	// unmanaged account of that name exists).
	skipAccount map[string]bool
	// qosOK holds QOS names an association may refer to.
	qosOK map[string]bool
}

func (p *planner) add(step int, c Change) { p.steps[step] = append(p.steps[step], c) }

func (p *planner) conflict(kind, name, why string) {
	p.add(stepConflict, Change{Op: OpConflict, Kind: kind, Name: name, Detail: why})
}

func (p *planner) run() {
	p.skipAccount = map[string]bool{}
	p.qosOK = map[string]bool{}
	for name := range p.cur.QOS {
		p.qosOK[name] = true
	}
	p.planParent()
	p.planQOS()
	p.planAccounts()
	p.planUsers()
	sort.SliceStable(p.steps[stepConflict], func(i, j int) bool {
		a, b := p.steps[stepConflict][i], p.steps[stepConflict][j]
		if a.Kind != b.Kind {
			return kindOrder(a.Kind) < kindOrder(b.Kind)
		}
		return a.Name < b.Name
	})
}

func kindOrder(k string) int {
	return strings.Index("qos account user", k)
}

func (p *planner) planParent() {
	switch a, ok := p.cur.Accounts[p.parent]; {
	case ok && a.InCluster:
		return // managed or not, it is used as it is and never changed
	case ok && !a.Managed:
		p.conflict("account", p.parent, "(the parent) exists, is not managed by frontdoor and has no association in this cluster; it is not changed")
		return
	}
	p.add(stepParent, Change{Op: OpAdd, Kind: "account", Name: p.parent, Detail: "parent=root",
		Args: []string{"add", "account", p.parent, p.cluster, "parent=root",
			"Description=" + managedDescription("parent of the accounts frontdoor manages"), "Organization=frontdoor"}})
}

func (p *planner) planQOS() {
	want := map[string]QOS{}
	for _, q := range p.d.QOS {
		want[q.Name] = q
	}
	for _, name := range sortedKeys(want) {
		q := want[name]
		lim := gpuTRES(q.MaxGPUPerUser, q.MaxGPUPerUserByType)
		cur, exists := p.cur.QOS[name]
		switch {
		case !exists:
			args := []string{"add", "qos", name, "Description=" + managedDescription("")}
			detail := []string{}
			if len(lim) > 0 {
				args = append(args, "MaxTRESPerUser="+lim.String())
				detail = append(detail, "MaxTRESPerUser="+lim.String())
			}
			if q.DenyOnLimit {
				args = append(args, "Flags=DenyOnLimit")
				detail = append(detail, "DenyOnLimit")
			}
			p.add(stepQOS, Change{Op: OpAdd, Kind: "qos", Name: name, Detail: strings.Join(detail, " "), Args: args})
			p.qosOK[name] = true
		case !cur.Managed:
			p.conflict("qos", name, fmt.Sprintf("exists and is not managed by frontdoor (description %q); its limits are left as they are", cur.Description))
		default:
			var set, detail []string
			if !cur.MaxTRESPerUser.Equal(lim) {
				set = append(set, "MaxTRESPerUser="+setTo(cur.MaxTRESPerUser, lim))
				detail = append(detail, fmt.Sprintf("MaxTRESPerUser %s -> %s", cur.MaxTRESPerUser.display(), lim.display()))
			}
			if cur.DenyOnLimit != q.DenyOnLimit {
				if q.DenyOnLimit {
					set = append(set, "Flags+=DenyOnLimit")
				} else {
					set = append(set, "Flags-=DenyOnLimit")
				}
				detail = append(detail, fmt.Sprintf("DenyOnLimit %s -> %s", onOff(cur.DenyOnLimit), onOff(q.DenyOnLimit)))
			}
			if len(set) > 0 {
				p.add(stepQOS, Change{Op: OpModify, Kind: "qos", Name: name, Detail: strings.Join(detail, ", "),
					Args: append([]string{"modify", "qos", "where", "name=" + name, "set"}, set...)})
			}
		}
	}
	for _, name := range sortedKeys(p.cur.QOS) {
		if _, keep := want[name]; !keep && p.cur.QOS[name].Managed {
			delete(p.qosOK, name) // going away: nothing may refer to it
			p.add(stepQOSRemove, Change{Op: OpRemove, Kind: "qos", Name: name,
				Args: []string{"delete", "qos", "where", "name=" + name}})
		}
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func (p *planner) planAccounts() {
	want := map[string]Account{}
	for _, a := range p.d.Accounts {
		want[a.Name] = a
	}
	for _, name := range sortedKeys(want) {
		a := want[name]
		lim := gpuTRES(a.GPULimit, a.GPUByType)
		cur, exists := p.cur.Accounts[name]
		switch {
		case !exists || (cur.Managed && !cur.InCluster):
			args := []string{"add", "account", name, p.cluster, "parent=" + p.parent,
				"Description=" + managedDescription(a.Description), "Organization=frontdoor"}
			detail := "parent=" + p.parent
			if len(lim) > 0 {
				args = append(args, "GrpTRES="+lim.String())
				detail += " GrpTRES=" + lim.String()
			}
			p.add(stepAccount, Change{Op: OpAdd, Kind: "account", Name: name, Detail: detail, Args: args})
		case !cur.Managed:
			p.skipAccount[name] = true
			p.conflict("account", name, fmt.Sprintf("exists and is not managed by frontdoor (description %q); neither it nor its users are changed", cur.Description))
		default:
			var set, detail []string
			if cur.Parent != p.parent {
				set = append(set, "parent="+p.parent)
				detail = append(detail, fmt.Sprintf("parent %s -> %s", cur.Parent, p.parent))
			}
			if !cur.GrpTRES.Equal(lim) {
				set = append(set, "GrpTRES="+setTo(cur.GrpTRES, lim))
				detail = append(detail, fmt.Sprintf("GrpTRES %s -> %s", cur.GrpTRES.display(), lim.display()))
			}
			// sacctmgr stores account descriptions in lower case.
			if !strings.EqualFold(cur.Description, a.Description) {
				set = append(set, "Description="+managedDescription(a.Description))
				detail = append(detail, fmt.Sprintf("Description %q -> %q", cur.Description, a.Description))
			}
			if len(set) > 0 {
				p.add(stepAccount, Change{Op: OpModify, Kind: "account", Name: name, Detail: strings.Join(detail, ", "),
					Args: append([]string{"modify", "account", "where", "name=" + name, p.cluster, "set"}, set...)})
			}
		}
	}
	for _, name := range sortedKeys(p.cur.Accounts) {
		if _, keep := want[name]; !keep && name != p.parent && p.cur.Accounts[name].Managed && p.cur.Accounts[name].InCluster {
			p.add(stepAccountRemove, Change{Op: OpRemove, Kind: "account", Name: name,
				Args: []string{"delete", "account", "where", "name=" + name, p.cluster}})
		}
	}
}

// wantAssoc is one desired association, expanded per partition.
type wantAssoc struct {
	key        AssocKey
	qos        []string // sorted; nil: not managed
	defaultQOS string
}

func (p *planner) managedAccount(name string) bool {
	return p.cur.Accounts[name].Managed
}

func (p *planner) planUsers() {
	want := map[string]User{}
	for _, u := range p.d.Users {
		want[u.Name] = u
	}
	names := map[string]bool{}
	for n := range want {
		names[n] = true
	}
	for n, u := range p.cur.Users {
		for k := range u.Assocs {
			if p.managedAccount(k.Account) {
				names[n] = true
			}
		}
	}
	for _, name := range sortedKeys(names) {
		u, desired := want[name]
		cur, exists := p.cur.Users[name]
		p.planUser(name, u, desired, cur, exists)
	}
}

func (p *planner) planUser(name string, u User, desired bool, cur UserState, exists bool) {
	// What the policy wants, minus what cannot be had.
	wants := map[AssocKey]wantAssoc{}
	defAccount := ""
	if desired {
		for _, as := range u.Assocs {
			if p.skipAccount[as.Account] {
				continue // reported with the account
			}
			if missing := p.missingQOS(as.QOS); missing != "" {
				p.conflict("user", name, fmt.Sprintf("account=%s: QOS %s does not exist and is not managed; association left out", as.Account, missing))
				continue
			}
			parts := as.Partitions
			if len(parts) == 0 {
				parts = []string{""}
			}
			var qos []string
			if len(as.QOS) > 0 {
				qos = append([]string(nil), as.QOS...)
				sort.Strings(qos)
			}
			for _, part := range parts {
				k := AssocKey{Account: as.Account, Partition: part}
				wants[k] = wantAssoc{key: k, qos: qos, defaultQOS: as.DefaultQOS}
			}
		}
		if hasAccount(wants, u.DefaultAccount) {
			defAccount = u.DefaultAccount
		} else {
			for _, as := range u.Assocs {
				if hasAccount(wants, as.Account) {
					defAccount = as.Account
					break
				}
			}
		}
	}

	// Additions: the default account's first, so a new user record gets
	// it as its default.
	var adds []wantAssoc
	for k, w := range wants {
		if _, ok := cur.Assocs[k]; !ok {
			adds = append(adds, w)
		}
	}
	sort.Slice(adds, func(i, j int) bool {
		a, b := adds[i].key, adds[j].key
		if (a.Account == defAccount) != (b.Account == defAccount) {
			return a.Account == defAccount
		}
		return lessKey(a, b)
	})
	created := exists
	for _, w := range adds {
		args := []string{"add", "user", name, "account=" + w.key.Account, p.cluster}
		detail := "account=" + w.key.Account
		if w.key.Partition != "" {
			args = append(args, "partition="+w.key.Partition)
			detail += " partition=" + w.key.Partition
		}
		if w.qos != nil {
			args = append(args, "QOS="+strings.Join(w.qos, ","))
			detail += " QOS=" + strings.Join(w.qos, ",")
		}
		if w.defaultQOS != "" {
			args = append(args, "DefaultQOS="+w.defaultQOS)
			detail += " DefaultQOS=" + w.defaultQOS
		}
		if !created {
			args = append(args, "DefaultAccount="+defAccount)
			created = true
		}
		p.add(stepUserAdd, Change{Op: OpAdd, Kind: "user", Name: name, Detail: detail, Args: args})
	}

	// Changes to associations that exist.
	var keep []AssocKey
	for k := range wants {
		if _, ok := cur.Assocs[k]; ok {
			keep = append(keep, k)
		}
	}
	sort.Slice(keep, func(i, j int) bool { return lessKey(keep[i], keep[j]) })
	for _, k := range keep {
		w, c := wants[k], cur.Assocs[k]
		var set, detail []string
		if w.qos != nil && !equalStrings(w.qos, c.QOS) {
			set = append(set, "QOS="+strings.Join(w.qos, ","))
			detail = append(detail, fmt.Sprintf("QOS %s -> %s", listOrNone(c.QOS), strings.Join(w.qos, ",")))
		}
		if w.defaultQOS != "" && w.defaultQOS != c.DefaultQOS {
			set = append(set, "DefaultQOS="+w.defaultQOS)
			detail = append(detail, fmt.Sprintf("DefaultQOS %s -> %s", orNone(c.DefaultQOS), w.defaultQOS))
		}
		if len(set) > 0 {
			p.add(stepUserAdd, Change{Op: OpModify, Kind: "user", Name: name,
				Detail: assocDetail(k) + " " + strings.Join(detail, ", "),
				Args:   append([]string{"modify", "user", "where", "name=" + name, "account=" + k.Account, "partition=" + k.Partition, p.cluster, "set"}, set...)})
		}
	}

	// Removals of managed associations the policy no longer grants.
	var drop []AssocKey
	unmanagedLeft := map[string]bool{}
	for k := range cur.Assocs {
		_, wanted := wants[k]
		switch {
		case !p.managedAccount(k.Account):
			unmanagedLeft[k.Account] = true
		case !wanted:
			drop = append(drop, k)
		}
	}
	sort.Slice(drop, func(i, j int) bool { return lessKey(drop[i], drop[j]) })

	// The default account: the policy's, unless a human set it to an
	// account frontdoor does not manage and the user still has it.
	if exists && len(wants) > 0 && cur.DefaultAccount != defAccount {
		if cur.DefaultAccount == "" || p.managedAccount(cur.DefaultAccount) || !unmanagedLeft[cur.DefaultAccount] {
			p.add(stepUserAdd, p.setDefaultAccount(name, cur.DefaultAccount, defAccount))
		}
	}
	if len(drop) == 0 {
		return
	}
	if len(wants) == 0 && len(unmanagedLeft) == 0 {
		// Nothing of the user remains: remove the record, which removes
		// the associations with it. Without a cluster condition: Slurm
		// (22.05) refuses "delete user where name=X cluster=C" and every
		// narrower form with "You can not remove the default account of
		// a user" once the default account's associations would all go
		// (checked on a real slurmdbd, test/slurme2e). This removes the
		// user from every cluster of the accounting database, so manage
		// a database whose users live on this cluster only.
		p.add(stepUserRemove, Change{Op: OpRemove, Kind: "user", Name: name,
			Args: []string{"delete", "user", "where", "name=" + name}})
		return
	}
	if len(wants) == 0 && !unmanagedLeft[cur.DefaultAccount] {
		// Only unmanaged associations remain and the default account is
		// about to go: Slurm would leave it dangling.
		p.add(stepUserAdd, p.setDefaultAccount(name, cur.DefaultAccount, sortedKeys(unmanagedLeft)[0]))
	}
	for _, k := range drop {
		p.add(stepUserRemove, Change{Op: OpRemove, Kind: "user", Name: name, Detail: assocDetail(k),
			Args: []string{"delete", "user", "where", "name=" + name, "account=" + k.Account, "partition=" + k.Partition, p.cluster}})
	}
}

func (p *planner) setDefaultAccount(name, from, to string) Change {
	return Change{Op: OpModify, Kind: "user", Name: name,
		Detail: fmt.Sprintf("DefaultAccount %s -> %s", orNone(from), to),
		Args:   []string{"modify", "user", "where", "name=" + name, p.cluster, "set", "DefaultAccount=" + to}}
}

// missingQOS names the first QOS of list that neither exists nor is
// about to be added.
func (p *planner) missingQOS(list []string) string {
	for _, q := range list {
		if !p.qosOK[q] {
			return q
		}
	}
	return ""
}

func hasAccount(w map[AssocKey]wantAssoc, account string) bool {
	for k := range w {
		if k.Account == account {
			return true
		}
	}
	return false
}

func lessKey(a, b AssocKey) bool {
	if a.Account != b.Account {
		return a.Account < b.Account
	}
	return a.Partition < b.Partition
}

func assocDetail(k AssocKey) string {
	if k.Partition == "" {
		return "account=" + k.Account
	}
	return "account=" + k.Account + " partition=" + k.Partition
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ",")
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
