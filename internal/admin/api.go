package admin

import "time"

// The admin API's JSON shapes (GET /v1/sessions, /v1/nodes, /v1/status):
// what the `frontdoor sessions`, `nodes` and `status` commands and the
// status page decode. Fields may be added, never renamed.

// Session is one relayed session through the gateway.
type Session struct {
	ID        string    `json:"id"`
	User      string    `json:"user"`
	Node      string    `json:"node"`
	Src       string    `json:"src"`
	Method    string    `json:"method"`
	Started   time.Time `json:"started"`
	BytesUp   int64     `json:"bytes_up"`
	BytesDown int64     `json:"bytes_down"`
	Channels  int64     `json:"channels"`
}

// NodeInfo is a login node as the gateway sees it.
type NodeInfo struct {
	Name           string    `json:"name"`
	Pool           string    `json:"pool"`
	Addr           string    `json:"addr"`
	Alive          bool      `json:"alive"`
	SSHDUp         bool      `json:"sshd_up"`
	Draining       bool      `json:"draining"`
	HealthAt       time.Time `json:"health_at"`
	Sessions       int       `json:"sessions"` // on the node, any gateway (static: this gateway)
	MaxSessions    int       `json:"max_sessions,omitempty"`
	Users          int       `json:"users"`
	Load1          float64   `json:"load1"`
	CPUs           int       `json:"cpus"`
	MemAvailFrac   float64   `json:"mem_avail_frac"`
	CPUPressure    float64   `json:"cpu_pressure"`
	MemPressure    float64   `json:"mem_pressure"`
	RecentlyRouted int       `json:"recently_routed"`
	Score          float64   `json:"score"`         // lower is better
	Here           int       `json:"sessions_here"` // through this gateway
	// NotTaking says why a discovered node takes no new logins (HyperPod
	// status); its live sessions go on.
	NotTaking string `json:"not_taking,omitempty"`
	// NoAgent: no agent reports for the node; the gateway probes its sshd
	// banner and scores it by sessions alone.
	NoAgent bool `json:"no_agent,omitempty"`
	// Lied: the node's agent recently sent health no real node could
	// (impossible figures, another address or pool); no new logins.
	Lied bool `json:"lied,omitempty"`
	// Warnings the node's agent raises (cluster.Warn*).
	Warnings []string `json:"warnings,omitempty"`
}

// Status is GET /v1/status: the front door as this gateway sees it, and
// what the status page (/status) and `frontdoor status` show. Lists are
// never null. Parts that are filled in by other code say so: until then
// they are empty.
type Status struct {
	// Gateway is this gateway's name; Now when the status was taken.
	Gateway string    `json:"gateway"`
	Now     time.Time `json:"now"`
	// Processes are this gateway's processes: the one answering and,
	// while an upgrade hands over, the old one still serving its
	// sessions (filled by the process lifecycle code; until then the
	// answering process only).
	Processes []Process `json:"processes"`
	// Gateways are the cluster's gateways that gossip shows alive, this
	// one included (without a cluster section: this one only).
	Gateways []GatewayInfo `json:"gateways"`
	// Nodes are the login nodes, as GET /v1/nodes.
	Nodes []NodeInfo `json:"nodes"`
	// Drains are the nodes that take no new sessions because an admin (or
	// the node's agent) drained them, with the deadline and message of a
	// maintenance drain where there is one.
	Drains []Drain `json:"drains"`
	// Refusals counts what this gateway refused recently, by reason.
	Refusals Refusals `json:"refusals"`
	// LastReload is how the last configuration reload went; absent until
	// one happened (filled by the process lifecycle code).
	LastReload *Reload `json:"last_reload,omitempty"`
}

// Process is one process of this gateway.
type Process struct {
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// State is "serving" (accepting new connections) or "draining"
	// (handed its listeners over; serving its sessions until they end or
	// DrainDeadline).
	State         string    `json:"state"`
	Sessions      int       `json:"sessions"`
	DrainDeadline time.Time `json:"drain_deadline,omitzero"`
}

// Process states.
const (
	ProcessServing  = "serving"
	ProcessDraining = "draining"
)

// GatewayInfo is one gateway of the cluster.
type GatewayInfo struct {
	Name string `json:"name"`
	// Addr is its gossip address ("" for this gateway without a cluster).
	Addr string `json:"addr,omitempty"`
	// Sessions are its live sessions, as it gossips them.
	Sessions int `json:"sessions"`
	// Self marks the gateway that answered.
	Self bool `json:"self,omitempty"`
}

// Drain is a node that takes no new sessions.
type Drain struct {
	Node string `json:"node"`
	// By is who drained it (an admin identity such as "unix:root", or
	// "agent" for the node's own drain switch), when known.
	By string `json:"by,omitempty"`
	// Deadline is when the node's remaining sessions are closed, and
	// Message what their users are told; both empty for a drain without
	// a deadline (filled by the maintenance drain code).
	Deadline time.Time `json:"deadline,omitzero"`
	Message  string    `json:"message,omitempty"`
	// Sessions are the sessions still open on the node (any gateway).
	Sessions int `json:"sessions"`
}

// Refusals are recent refusals by reason: connections turned away before
// authentication (connection:REASON), failed and denied logins
// (auth:METHOD:fail|denied), login node failures (backend:STAGE), and
// gossip entries refused (gossip:REASON).
type Refusals struct {
	// WindowSeconds is how far back the counts go (or to Since, the start
	// of this process, if later).
	WindowSeconds int       `json:"window_s"`
	Since         time.Time `json:"since"`
	Total         int       `json:"total"`
	// ByReason is sorted by count, highest first.
	ByReason []ReasonCount `json:"by_reason"`
}

// ReasonCount is how many refusals one reason had.
type ReasonCount struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// Reload is the result of one configuration reload.
type Reload struct {
	At time.Time `json:"at"`
	OK bool      `json:"ok"`
	// By is what asked for it: "SIGHUP", or the admin identity of a
	// `frontdoor reload`.
	By string `json:"by,omitempty"`
	// Error is why an invalid configuration changed nothing (file:line
	// problems, one per line).
	Error string `json:"error,omitempty"`
}
