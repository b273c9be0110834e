package admin

import "time"

// The admin API's JSON shapes (GET /v1/sessions, /v1/nodes): what the
// `frontdoor sessions` and `frontdoor nodes` commands decode. Fields may be
// added, never renamed.

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
