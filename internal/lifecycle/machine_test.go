package lifecycle

import (
	"fmt"
	"testing"
)

// Every event in every state, in the order a hurried admin or systemd
// might send them: what the process does, and what it refuses.
func TestMachine(t *testing.T) {
	serving := Machine{State: Serving}
	upgrading := Machine{State: Upgrading}
	draining := Machine{State: Draining, Reason: ReasonShutdown}
	for _, tt := range []struct {
		name    string
		from    Machine
		events  []Event
		want    Machine
		do      Action // of the last event
		refused string
	}{
		{"reload", serving, []Event{EvReload}, serving, Reload, ""},
		{"upgrade", serving, []Event{EvUpgrade}, upgrading, StartUpgrade, ""},
		{"upgrade twice: the second is refused", serving, []Event{EvUpgrade, EvUpgrade}, upgrading, None, RefusedUpgrading},
		{"SIGHUP during an upgrade is refused", serving, []Event{EvUpgrade, EvReload}, upgrading, None, RefusedUpgrading},
		{"the new process is ready", serving, []Event{EvUpgrade, EvUpgradeOK}, Machine{State: Draining, Reason: ReasonUpgrade}, DrainUpgrade, ""},
		{"the new process failed: serve on", serving, []Event{EvUpgrade, EvUpgradeFailed}, serving, Resume, ""},
		{"upgrade again after a failed one", serving, []Event{EvUpgrade, EvUpgradeFailed, EvUpgrade}, upgrading, StartUpgrade, ""},
		{"upgrade while the previous process drains", Machine{State: Serving, Predecessor: true}, []Event{EvUpgrade},
			Machine{State: Serving, Predecessor: true}, None, RefusedPredecessor},
		{"upgrade once the previous process is gone", Machine{State: Serving, Predecessor: true}, []Event{EvPredecessorGone, EvUpgrade},
			upgrading, StartUpgrade, ""},
		{"after an upgrade, nothing more", serving, []Event{EvUpgrade, EvUpgradeOK, EvUpgrade}, Machine{State: Draining, Reason: ReasonUpgrade}, None, RefusedDraining},
		{"reload while draining", draining, []Event{EvReload}, draining, None, RefusedDraining},
		{"SIGTERM", serving, []Event{EvTerminate}, draining, DrainShutdown, ""},
		{"SIGTERM twice", serving, []Event{EvTerminate, EvTerminate}, draining, None, ""},
		{"SIGTERM during an upgrade cancels it", serving, []Event{EvUpgrade, EvTerminate}, Machine{State: Upgrading, TerminatePending: true}, CancelUpgrade, ""},
		{"… and drains once it failed", serving, []Event{EvUpgrade, EvTerminate, EvUpgradeFailed}, draining, ResumeAndDrain, ""},
		{"… or hands over if it got through first", serving, []Event{EvUpgrade, EvTerminate, EvUpgradeOK}, Machine{State: Draining, Reason: ReasonUpgrade}, DrainUpgrade, ""},
		{"SIGTERM twice during an upgrade", serving, []Event{EvUpgrade, EvTerminate, EvTerminate}, Machine{State: Upgrading, TerminatePending: true}, None, ""},
		{"drained", draining, []Event{EvDrained}, Machine{State: Stopped, Reason: ReasonShutdown}, Exit, ""},
		{"drain timeout", draining, []Event{EvDrainTimeout}, Machine{State: Stopped, Reason: ReasonShutdown}, CloseAndExit, ""},
		{"SIGINT", serving, []Event{EvInterrupt}, Machine{State: Stopped}, CloseNow, ""},
		{"SIGINT during an upgrade", serving, []Event{EvUpgrade, EvInterrupt}, Machine{State: Stopped}, CloseNow, ""},
		{"SIGINT while draining", draining, []Event{EvInterrupt}, Machine{State: Stopped, Reason: ReasonShutdown}, CloseNow, ""},
		{"SIGINT after the stop", Machine{State: Stopped}, []Event{EvInterrupt}, Machine{State: Stopped}, None, ""},
		{"an upgrade outcome out of the blue", serving, []Event{EvUpgradeOK}, serving, None, ""},
		{"another one", serving, []Event{EvUpgradeFailed}, serving, None, ""},
		{"drained while serving", serving, []Event{EvDrained, EvDrainTimeout}, serving, None, ""},
		{"timeout after the drain ended", draining, []Event{EvDrained, EvDrainTimeout}, Machine{State: Stopped, Reason: ReasonShutdown}, None, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.from
			var s Step
			for _, e := range tt.events {
				m, s = m.On(e)
			}
			if m != tt.want || s.Do != tt.do || s.Refused != tt.refused {
				t.Fatalf("after %v: %+v, %+v; want %+v, do %v, refused %q", tt.events, m, s, tt.want, tt.do, tt.refused)
			}
		})
	}
}

// No sequence of events gets the process stuck: from any state reached, a
// SIGINT stops it, and a refusal never changes the state.
func TestMachineNeverStuck(t *testing.T) {
	events := []Event{EvReload, EvUpgrade, EvUpgradeOK, EvUpgradeFailed, EvTerminate, EvDrained, EvDrainTimeout, EvPredecessorGone}
	var walk func(m Machine, depth int, path string)
	walk = func(m Machine, depth int, path string) {
		if n, s := m.On(EvInterrupt); n.State != Stopped || (m.State != Stopped && s.Do != CloseNow) {
			t.Fatalf("%s: SIGINT gives %+v, %+v", path, n, s)
		}
		if depth == 0 {
			return
		}
		for _, e := range events {
			n, s := m.On(e)
			if s.Refused != "" && n != m {
				t.Fatalf("%s,%d: refused (%s) and changed %+v to %+v", path, e, s.Refused, m, n)
			}
			walk(n, depth-1, fmt.Sprintf("%s,%d", path, e))
		}
	}
	walk(Machine{State: Serving}, 5, "serving")
	walk(Machine{State: Serving, Predecessor: true}, 5, "serving+predecessor")
}
