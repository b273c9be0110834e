package lifecycle

// The process's state machine, written down before the code, and pure: the
// driver (process.go) feeds it events and does what it says.
//
//	state      event            → state      do
//	serving    reload           = serving    reload
//	serving    upgrade          → upgrading  start the upgrade
//	                              (refused while the previous process drains:
//	                              one upgrade at a time, two processes at most)
//	serving    terminate        → draining   drain (shutdown)
//	upgrading  upgrade ok       → draining   drain (upgrade: the sockets are handed over)
//	upgrading  upgrade failed   → serving    take the place back
//	upgrading  reload, upgrade  = upgrading  refused: an upgrade is under way
//	upgrading  terminate        = upgrading  cancel the upgrade; drain (shutdown) once it failed,
//	                              or drain (upgrade) if it got through first
//	draining   drained          → stopped    exit
//	draining   drain timeout    → stopped    close the sessions left, saying why; exit
//	draining   reload, upgrade  = draining   refused: this process takes no logins
//	draining   terminate        = draining   nothing: already draining
//	any        interrupt        → stopped    (cancel an upgrade,) close every session now; exit
//	any        predecessor gone              the previous process exited: upgrades may go
//
// Anything else (an upgrade outcome while not upgrading, drained while
// not draining) cannot happen, and changes nothing if it does.

// State is what the process does now.
type State string

// The states, as GET /v1/status shows them.
const (
	Serving   State = "serving"
	Upgrading State = "upgrading"
	Draining  State = "draining"
	Stopped   State = "stopped"
)

// Event is something that happened to the process.
type Event int

const (
	EvReload Event = iota
	EvUpgrade
	EvUpgradeOK
	EvUpgradeFailed
	EvTerminate // SIGTERM
	EvInterrupt // SIGINT
	EvDrained   // the last connection ended
	EvDrainTimeout
	EvPredecessorGone
)

// Action is what the driver does for an event.
type Action int

const (
	None Action = iota
	Reload
	StartUpgrade
	CancelUpgrade // the upgrade is cancelled; its failure then drains
	Resume        // take the place back after a failed upgrade
	ResumeAndDrain
	DrainUpgrade  // stop accepting (sockets handed over), drain
	DrainShutdown // stop accepting, drain
	CloseNow      // close every session, exit (cancelling an upgrade first)
	Exit
	CloseAndExit // the drain timed out
)

// Drain reasons.
const (
	ReasonUpgrade  = "upgrade"
	ReasonShutdown = "shutdown"
)

// Machine is the state and what it remembers.
type Machine struct {
	State State
	// Predecessor: the process this one took over from still drains.
	Predecessor bool
	// TerminatePending: a SIGTERM came during an upgrade.
	TerminatePending bool
	// Reason is the drain's, while draining.
	Reason string
}

// Step is the outcome of an event: the action, or why it is refused.
type Step struct {
	Do      Action
	Refused string
}

// Refusals, as the admin and the log see them.
const (
	RefusedUpgrading   = "an upgrade is under way; try again when it is over (frontdoor status)"
	RefusedDraining    = "this process is draining and takes no new logins; its successor, if any, serves the gateway now"
	RefusedPredecessor = "the previous process still relays sessions (one upgrade at a time): upgrade again once it has exited, or end its sessions now with SIGINT to it"
)

// On applies e.
func (m Machine) On(e Event) (Machine, Step) {
	if e == EvPredecessorGone {
		m.Predecessor = false
		return m, Step{}
	}
	if e == EvInterrupt && m.State != Stopped {
		m.State = Stopped
		return m, Step{Do: CloseNow}
	}
	switch m.State {
	case Serving:
		switch e {
		case EvReload:
			return m, Step{Do: Reload}
		case EvUpgrade:
			if m.Predecessor {
				return m, Step{Refused: RefusedPredecessor}
			}
			m.State = Upgrading
			return m, Step{Do: StartUpgrade}
		case EvTerminate:
			m.State, m.Reason = Draining, ReasonShutdown
			return m, Step{Do: DrainShutdown}
		}
	case Upgrading:
		switch e {
		case EvReload, EvUpgrade:
			return m, Step{Refused: RefusedUpgrading}
		case EvUpgradeOK:
			m.State, m.Reason, m.TerminatePending = Draining, ReasonUpgrade, false
			return m, Step{Do: DrainUpgrade}
		case EvUpgradeFailed:
			if m.TerminatePending {
				m.State, m.Reason, m.TerminatePending = Draining, ReasonShutdown, false
				return m, Step{Do: ResumeAndDrain}
			}
			m.State = Serving
			return m, Step{Do: Resume}
		case EvTerminate:
			if m.TerminatePending {
				return m, Step{}
			}
			m.TerminatePending = true
			return m, Step{Do: CancelUpgrade}
		}
	case Draining:
		switch e {
		case EvReload, EvUpgrade:
			return m, Step{Refused: RefusedDraining}
		case EvDrained:
			m.State = Stopped
			return m, Step{Do: Exit}
		case EvDrainTimeout:
			m.State = Stopped
			return m, Step{Do: CloseAndExit}
		}
	}
	return m, Step{}
}
