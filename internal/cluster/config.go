package cluster

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"
)

// Config is the gossip membership of one gateway or agent. It is the
// `cluster:` section of both the gateway and the agent configuration.
//
// Two transports (see the package doc for why): gateways gossip among
// themselves on GatewayPort, encrypted with keys derived from GatewayKeys;
// agents send their signed health to the gateways' BindPort, encrypted
// with SecretKeys. On an agent, Join lists the gateways it sends to.
//
// Encryption and key rotation: SecretKeys holds base64 AES keys (16, 24 or
// 32 bytes decoded; make one with `head -c32 /dev/urandom | base64`). The
// first key encrypts; every key listed decrypts. To rotate without a split:
//  1. append the new key to SecretKeys on every member, restart them one
//     by one (each now reads both keys, still writes with the old one);
//  2. move the new key first on every member, restart one by one;
//  3. remove the old key everywhere.
//
// GatewayKeys rotate the same way, on the gateways. The same steps work at
// runtime through Cluster.Keyring (memberlist's AddKey / UseKey /
// RemoveKey).
type Config struct {
	// Name is this member's unique name. Empty (the default): a gateway
	// uses its gateway.name; an agent always uses its node name (routing
	// needs it), whatever is written here.
	Name string `yaml:"name"`

	// BindAddr is the address gossip listens on, UDP and TCP.
	BindAddr string `yaml:"bind_addr"`
	// BindPort is the gossip port, UDP and TCP. On a gateway it is where
	// agents send their health; on an agent it is only the port its
	// packets leave from (nothing needs to reach it). 0 picks a free port
	// (tests).
	BindPort int `yaml:"bind_port"`
	// GatewayPort is where a gateway gossips with the other gateways (UDP
	// and TCP, on BindAddr and AdvertiseAddr): the gateways' own pool,
	// encrypted with keys derived from gateway_keys, so no agent can join
	// it or speak in it. Open it between gateways only. Gateways only; 0
	// picks a free port (tests).
	GatewayPort int `yaml:"gateway_port"`
	// AdvertiseAddr is the address other members dial. Set it on hosts
	// with several interfaces; empty lets memberlist pick a private
	// address.
	AdvertiseAddr string `yaml:"advertise_addr"`
	// AdvertisePort is the port other members dial; 0 means BindPort.
	AdvertisePort int `yaml:"advertise_port"`

	// Join lists host:port of the gateways' BindPort. An agent sends its
	// signed health to every address each entry resolves to (re-resolved
	// every RejoinInterval, so a DNS name listing the gateways follows
	// them). On a gateway it lists the other gateways: GatewayJoin
	// defaults to its hosts at GatewayPort, and with SinglePoolCompat the
	// gateway also joins the old shared pool there.
	Join []string `yaml:"join"`
	// GatewayJoin lists host:port of other gateways' GatewayPort to join at
	// start and rejoin while missing (every RejoinInterval). Default: the
	// hosts of Join at this gateway's GatewayPort.
	GatewayJoin []string `yaml:"gateway_join"`

	// Label is prepended to every packet and stream; members with another
	// label are refused. It keeps two clusters on one network apart.
	Label string `yaml:"label"`

	// SecretKeys are the base64 gossip keys; the first is the primary.
	SecretKeys []string `yaml:"secret_keys"`
	// GatewayKeys are base64 keys (like secret_keys) held by the gateways
	// only, never by agents: keys derived from them encrypt the gateways'
	// own pool (GatewayPort) and seal the gateway state (sessions,
	// affinity, drains, bans) against the agents, which hold secret_keys
	// too. Required on gateways unless insecure; the first seals and
	// encrypts, every one listed opens, so they rotate the way secret_keys
	// do (restart the gateways one by one at each step).
	GatewayKeys []string `yaml:"gateway_keys"`
	// SinglePoolCompat is for a rolling upgrade from releases where every
	// gateway and agent shared one pool on BindPort. While set, a gateway
	// also joins that pool (Join) and exchanges the sealed gateway state
	// with gateways of the old release there, and counts them alive as
	// that pool says (as the old release does, an agent can forge that).
	// Set it on every gateway while any gateway runs the old release;
	// remove it once none does.
	SinglePoolCompat bool `yaml:"single_pool_compat"`
	// HeartbeatInterval is how often an agent re-signs and re-sends its
	// last health, with a new version, even when nothing changed: what
	// proves to the gateways that it is alive.
	HeartbeatInterval time.Duration `yaml:"heartbeat_interval"`
	// NodeDeadAfter is how long after the last new version of a node's
	// signed health a gateway counts the node dead (out of routing). Only
	// the node's own host key can make a new version, so nobody else can
	// keep a dead node alive or declare a live one dead. Keep it at least
	// 3 × heartbeat_interval (a lost packet or two must not kill a node),
	// and at least 3 × the agents' `interval` while any agent runs a
	// release without heartbeats.
	NodeDeadAfter time.Duration `yaml:"node_dead_after"`
	// LiarPenalty is how long a node whose agent sent health no real node
	// could (impossible figures, another address or pool, all signed with
	// the node's own key) stays out of routing and of the gateways' own
	// banner probes.
	LiarPenalty time.Duration `yaml:"liar_penalty"`
	// MaxClockSkew is how far ahead of this member's clock a gossiped
	// version may be; later ones are refused, so nobody can publish a
	// value no later write beats.
	MaxClockSkew time.Duration `yaml:"max_clock_skew"`
	// DrainTTL is how long an admin drain lasts unless renewed.
	DrainTTL time.Duration `yaml:"drain_ttl"`
	// LocksFile is where a gateway keeps the account locks (`frontdoor
	// lock`) so that they survive a restart of every gateway at once:
	// persistent, private to this gateway (written mode 0600). The
	// default is in the systemd unit's StateDirectory. Gateways only.
	LocksFile string `yaml:"locks_file"`
	// Insecure must be set to run without SecretKeys. Never in production:
	// gossip carries sessions, affinities and bans.
	Insecure bool `yaml:"insecure"`

	// GossipInterval is how often queued broadcasts are sent to
	// GossipNodes random members; it bounds health propagation latency.
	GossipInterval time.Duration `yaml:"gossip_interval"`
	// GossipNodes is how many random members each gossip round sends to.
	GossipNodes int `yaml:"gossip_nodes"`
	// RetransmitMult scales how many times each member sends a health
	// update it learned: that many times ceil(log10(members+1)). Higher
	// makes a member missing an update (until push/pull) rarer.
	RetransmitMult int `yaml:"retransmit_mult"`
	// ProbeInterval is how often a member probes a random other member.
	// With ProbeTimeout and SuspicionMult it decides how fast a dead
	// member is declared dead: about (1 + SuspicionMult × log10(members))
	// probe intervals.
	ProbeInterval time.Duration `yaml:"probe_interval"`
	// ProbeTimeout is how long a probe waits for the answer; shorter than
	// ProbeInterval.
	ProbeTimeout time.Duration `yaml:"probe_timeout"`
	// SuspicionMult scales how long a suspected member has to refute the
	// suspicion before it is declared dead (see ProbeInterval).
	SuspicionMult int `yaml:"suspicion_mult"`
	// PushPullInterval is how often full state is exchanged with one random
	// member over TCP; it repairs anything broadcasts missed.
	PushPullInterval time.Duration `yaml:"push_pull_interval"`
	// GatewaySyncInterval is how often a gateway sends the gateway state
	// (sessions, affinity, drains, bans) that changed since its previous
	// sync to every other gateway over TCP, repairing lost direct packets;
	// every 15th sync sends all of it.
	GatewaySyncInterval time.Duration `yaml:"gateway_sync_interval"`
	// RejoinInterval is how often a member that is alone retries Join.
	RejoinInterval time.Duration `yaml:"rejoin_interval"`
	// DeadNodeReclaim is how long after a member died its name may come
	// back from another address (a node rebuilt with a new IP).
	DeadNodeReclaim time.Duration `yaml:"dead_node_reclaim"`

	// RoutedWindow is how long a routing decision may count against a
	// node while waiting for the node's agent to measure the session; keep
	// it above the agent's interval plus propagation.
	RoutedWindow time.Duration `yaml:"routed_window"`
	// AffinityTTL is how long a user→node affinity is kept after the
	// user's last session; route.sticky_for decides whether it binds, so
	// keep this at least as long.
	AffinityTTL time.Duration `yaml:"affinity_ttl"`
	// TombstoneTTL is how long deletions are remembered so that an old copy
	// of a deleted entry cannot come back.
	TombstoneTTL time.Duration `yaml:"tombstone_ttl"`
	// NodeTTL is how long the health of a node that stopped reporting is
	// kept (it shows as dead meanwhile).
	NodeTTL time.Duration `yaml:"node_ttl"`
}

// DefaultConfig returns a LAN profile: a dead node is out within
// NodeDeadAfter (4 s: four heartbeats of 1 s) whatever the cluster's size,
// health reaches every gateway in one packet, and a dead gateway is out of
// the gateways' pool in about ProbeInterval + SuspicionMult *
// log10(gateways) * ProbeInterval (a second or two). Probing faster
// detected deaths sooner but declared live members dead on an overloaded
// 2-core host.
//
// Name is left empty: the configuration that holds the section sets it
// (the gateway's or the node's name).
func DefaultConfig() Config {
	return Config{
		BindAddr:            "0.0.0.0",
		BindPort:            7946,
		GatewayPort:         7947,
		HeartbeatInterval:   time.Second,
		NodeDeadAfter:       4 * time.Second,
		LiarPenalty:         10 * time.Minute,
		GossipInterval:      100 * time.Millisecond,
		GossipNodes:         4,
		RetransmitMult:      4,
		ProbeInterval:       time.Second,
		ProbeTimeout:        500 * time.Millisecond,
		SuspicionMult:       2,
		PushPullInterval:    15 * time.Second,
		RejoinInterval:      5 * time.Second,
		GatewaySyncInterval: 2 * time.Second,
		DeadNodeReclaim:     30 * time.Second,
		RoutedWindow:        10 * time.Second,
		AffinityTTL:         24 * time.Hour,
		TombstoneTTL:        time.Hour,
		NodeTTL:             time.Hour,
		MaxClockSkew:        time.Minute,
		DrainTTL:            7 * 24 * time.Hour,
		LocksFile:           "/var/lib/frontdoor/locks.json",
	}
}

// SetDefaults sets c to DefaultConfig (yamlconf.Defaulter: a cluster
// section the file has starts from it).
func (c *Config) SetDefaults() { *c = DefaultConfig() }

// Validate reports a configuration that cannot work, each error as
// "cluster.key: problem" (errors.Join'ed).
func (c Config) Validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("cluster.name: must be set"))
	}
	if len(c.Name) > 128 {
		errs = append(errs, errors.New("cluster.name: longer than 128 bytes"))
	}
	if c.BindAddr == "" || net.ParseIP(c.BindAddr) == nil {
		errs = append(errs, fmt.Errorf("cluster.bind_addr: %q is not an IP address", c.BindAddr))
	}
	if c.AdvertiseAddr != "" && net.ParseIP(c.AdvertiseAddr) == nil {
		errs = append(errs, fmt.Errorf("cluster.advertise_addr: %q is not an IP address", c.AdvertiseAddr))
	}
	if c.BindPort < 0 || c.BindPort > 65535 || c.AdvertisePort < 0 || c.AdvertisePort > 65535 {
		errs = append(errs, errors.New("cluster.bind_port/advertise_port: out of range"))
	}
	if c.GatewayPort < 0 || c.GatewayPort > 65535 {
		errs = append(errs, errors.New("cluster.gateway_port: out of range"))
	}
	if c.GatewayPort != 0 && c.GatewayPort == c.BindPort {
		errs = append(errs, errors.New("cluster.gateway_port: must differ from bind_port (agents reach bind_port; only gateways reach gateway_port)"))
	}
	for i, j := range c.Join {
		if _, _, err := net.SplitHostPort(j); err != nil {
			errs = append(errs, fmt.Errorf("cluster.join[%d]: %q: %w", i, j, err))
		}
	}
	for i, j := range c.GatewayJoin {
		if _, _, err := net.SplitHostPort(j); err != nil {
			errs = append(errs, fmt.Errorf("cluster.gateway_join[%d]: %q: %w", i, j, err))
		}
	}
	if len(c.Label) > memberlist.LabelMaxSize-len(gatewayLabelSuffix) {
		errs = append(errs, fmt.Errorf("cluster.label: longer than %d bytes", memberlist.LabelMaxSize-len(gatewayLabelSuffix)))
	}
	switch {
	case len(c.SecretKeys) == 0 && !c.Insecure:
		errs = append(errs, errors.New("cluster.secret_keys: required (or set cluster.insecure: true to gossip in clear)"))
	case len(c.SecretKeys) > 0 && c.Insecure:
		errs = append(errs, errors.New("cluster.insecure: set together with secret_keys; choose one"))
	}
	if _, err := c.keys(); err != nil {
		errs = append(errs, err)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"gossip_interval", c.GossipInterval}, {"probe_interval", c.ProbeInterval},
		{"probe_timeout", c.ProbeTimeout}, {"push_pull_interval", c.PushPullInterval},
		{"rejoin_interval", c.RejoinInterval}, {"gateway_sync_interval", c.GatewaySyncInterval},
		{"routed_window", c.RoutedWindow}, {"affinity_ttl", c.AffinityTTL},
		{"tombstone_ttl", c.TombstoneTTL}, {"node_ttl", c.NodeTTL},
		{"max_clock_skew", c.MaxClockSkew}, {"drain_ttl", c.DrainTTL},
		{"heartbeat_interval", c.HeartbeatInterval}, {"node_dead_after", c.NodeDeadAfter},
		{"liar_penalty", c.LiarPenalty},
	} {
		if d.d <= 0 {
			errs = append(errs, fmt.Errorf("cluster.%s: must be positive", d.name))
		}
	}
	if c.HeartbeatInterval > 0 && c.NodeDeadAfter < 2*c.HeartbeatInterval {
		errs = append(errs, errors.New("cluster.node_dead_after: must be at least twice heartbeat_interval (better three times): one lost heartbeat must not kill a node"))
	}
	if c.ProbeTimeout >= c.ProbeInterval {
		errs = append(errs, errors.New("cluster.probe_timeout: must be shorter than probe_interval"))
	}
	if c.GossipNodes < 1 || c.SuspicionMult < 1 || c.RetransmitMult < 1 {
		errs = append(errs, errors.New("cluster.gossip_nodes/suspicion_mult/retransmit_mult: must be at least 1"))
	}
	return errors.Join(errs...)
}

// ValidateFor is Validate plus what the member's role requires: gateways
// hold gateway_keys, agents must not.
func (c Config) ValidateFor(role Role) error {
	errs := []error{c.Validate()}
	switch role {
	case RoleGateway:
		if len(c.GatewayKeys) == 0 && !c.Insecure {
			errs = append(errs, errors.New("cluster.gateway_keys: required on a gateway: it seals sessions, affinity, drains and bans from the login-node agents, which hold secret_keys too (make one with `head -c32 /dev/urandom | base64`; never give it to an agent)"))
		}
		for i, k := range c.GatewayKeys {
			if slices.Contains(c.SecretKeys, k) {
				errs = append(errs, fmt.Errorf("cluster.gateway_keys[%d]: is also in secret_keys, which the agents hold; use a separate key", i))
			}
		}
	case RoleAgent:
		if len(c.GatewayKeys) > 0 {
			errs = append(errs, errors.New("cluster.gateway_keys: must not be set on an agent: an agent holding it could forge gateway state"))
		}
		if c.SinglePoolCompat {
			errs = append(errs, errors.New("cluster.single_pool_compat: gateways only (agents of this release never join a pool)"))
		}
		if len(c.Join) == 0 {
			errs = append(errs, errors.New("cluster.join: required on an agent: the gateways (host:port of their bind_port) it sends its health to"))
		}
	}
	return errors.Join(errs...)
}

// keys decodes SecretKeys.
func (c Config) keys() ([][]byte, error) {
	if _, err := decodeKeys("gateway_keys", c.GatewayKeys); err != nil {
		return nil, err
	}
	return decodeKeys("secret_keys", c.SecretKeys)
}

// decodeKeys decodes base64 AES keys for the key list named field.
func decodeKeys(field string, list []string) ([][]byte, error) {
	var out [][]byte
	for i, s := range list {
		k, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("cluster.%s[%d]: %w", field, i, err)
		}
		if err := memberlist.ValidateKey(k); err != nil {
			return nil, fmt.Errorf("cluster.%s[%d]: %w", field, i, err)
		}
		out = append(out, k)
	}
	return out, nil
}

// memberlistConfig builds memberlist's configuration for one of the two
// transports: name, port, label and keys come from the caller
// (transport.go), the timings from c.
func (c Config) memberlistConfig(port int, label string, keys [][]byte) (*memberlist.Config, error) {
	mc := memberlist.DefaultLANConfig()
	mc.Name = c.Name
	mc.BindAddr = c.BindAddr
	mc.BindPort = port
	mc.AdvertiseAddr = c.AdvertiseAddr
	mc.AdvertisePort = port
	if port == c.BindPort && c.AdvertisePort != 0 {
		mc.AdvertisePort = c.AdvertisePort
	}
	mc.Label = label
	mc.GossipInterval = c.GossipInterval
	mc.GossipNodes = c.GossipNodes
	mc.RetransmitMult = c.RetransmitMult
	mc.ProbeInterval = c.ProbeInterval
	mc.ProbeTimeout = c.ProbeTimeout
	mc.SuspicionMult = c.SuspicionMult
	mc.PushPullInterval = c.PushPullInterval
	mc.DeadNodeReclaimTime = c.DeadNodeReclaim
	mc.TCPTimeout = 2 * time.Second
	if len(keys) > 0 {
		kr, err := memberlist.NewKeyring(keys[1:], keys[0])
		if err != nil {
			return nil, fmt.Errorf("cluster: keyring: %w", err)
		}
		mc.Keyring = kr
		// Refuse clear-text packets and streams from anyone.
		mc.GossipVerifyIncoming = true
		mc.GossipVerifyOutgoing = true
	}
	return mc, nil
}

// gatewayLabelSuffix separates the gateways' pool from the agent port even
// without encryption (insecure labs), so a misdirected agent is refused
// (transport.go).
const gatewayLabelSuffix = "/gateways"

// gatewaySeeds is GatewayJoin, or the hosts of Join at GatewayPort.
func (c Config) gatewaySeeds() []string {
	if len(c.GatewayJoin) > 0 || c.GatewayPort == 0 {
		return c.GatewayJoin
	}
	var out []string
	for _, j := range c.Join {
		if host, _, err := net.SplitHostPort(j); err == nil {
			out = append(out, net.JoinHostPort(host, strconv.Itoa(c.GatewayPort)))
		}
	}
	return out
}
