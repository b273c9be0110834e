package main

// The JSON report written to -out. Its field names are the format of
// bench/results/gossip.json: add fields, never rename them.

// Result is the JSON written to -out.
type Result struct {
	Setup               Setup        `json:"setup"`
	StartupConvergeMS   float64      `json:"startup_convergence_ms"`
	HealthPropagationMS Dist         `json:"health_propagation_ms"`
	DeadNodeExclusionMS Dist         `json:"dead_node_exclusion_ms"`
	Placement           []Placement  `json:"placement"`
	Sticky              StickyResult `json:"sticky_reconnect"`
	RefusedLogins       int          `json:"refused_logins"`
	Steady              Cost         `json:"steady_cost"`
	Targets             Targets      `json:"targets"`
}

type Setup struct {
	Agents           int     `json:"agents"`
	Gateways         int     `json:"gateways"`
	GossipIntervalMS float64 `json:"gossip_interval_ms"`
	GossipNodes      int     `json:"gossip_nodes"`
	ProbeIntervalMS  float64 `json:"probe_interval_ms"`
	ProbeTimeoutMS   float64 `json:"probe_timeout_ms"`
	SuspicionMult    int     `json:"suspicion_mult"`
	PushPullMS       float64 `json:"push_pull_interval_ms"`
	AgentIntervalMS  float64 `json:"agent_publish_interval_ms"`
	HeartbeatMS      float64 `json:"heartbeat_interval_ms"`
	NodeDeadAfterMS  float64 `json:"node_dead_after_ms"`
	Encrypted        bool    `json:"encrypted"`
	Choices          int     `json:"route_choices"`
	Seed             uint64  `json:"seed"`
	LoadAvgAtStart   string  `json:"loadavg_at_start"` // the machine is shared; read results with it
	CPUs             int     `json:"cpus"`
}

type Dist struct {
	N int `json:"n"`
	// Missed counts trials that did not finish within the trial timeout;
	// they are included in the quantiles at the timeout value.
	Missed int     `json:"missed"`
	P50    float64 `json:"p50"`
	P99    float64 `json:"p99"`
	Max    float64 `json:"max"`
}

type Placement struct {
	Scenario  string  `json:"scenario"` // empty: idle nodes; skewed: uneven sessions before the burst
	Strategy  string  `json:"strategy"`
	RatePerS  float64 `json:"rate_per_s,omitempty"`
	Max       int     `json:"max_sessions"`
	Mean      float64 `json:"mean_sessions"`
	MaxOnMean float64 `json:"max_over_mean"`
	// BestMaxOnMean is the best any placement could do from the same
	// starting sessions (water-filling).
	BestMaxOnMean float64 `json:"best_possible_max_over_mean"`
}

type StickyResult struct {
	N              int     `json:"n"`
	LiveShare      float64 `json:"share_with_live_session"`
	AfterEndShare  float64 `json:"share_after_session_ended"`
	NLBExpectShare float64 `json:"per_flow_hash_expected_share"`
}

type Targets struct {
	HealthP99MS   float64 `json:"health_p99_ms"`
	DeadNodeMS    float64 `json:"dead_node_ms"`
	MaxOnMean     float64 `json:"max_over_mean"`
	StickyPercent float64 `json:"sticky_percent"`
}
