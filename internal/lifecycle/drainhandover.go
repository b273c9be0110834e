package lifecycle

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/assembly"
	"github.com/frontdoor-hpc/frontdoor/internal/cluster"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
)

// Maintenance drains across an upgrade. The old process handed its gossip
// member over, so the gateways' shared state no longer reaches it; but it
// still relays sessions, and those on a node drained for maintenance must
// be told and closed like any other — and not closed after an undrain. So
// the new process sends it the drains as the shared state has them, once
// after the takeover and again whenever they change ("maintenance" on the
// handover channel), and the old process's watcher follows them
// (assembly.Gateway.SuccessorDrains). An old process of a release that
// does not read them keeps the drains it knew at the handover.

// maintenanceDrain is one drain on the channel.
type maintenanceDrain struct {
	Node     string    `json:"node"`
	Deadline time.Time `json:"deadline,omitzero"`
	Message  string    `json:"message,omitempty"`
	By       string    `json:"by,omitempty"`
}

// maintenanceEvery is how often the new process looks for changed drains.
const maintenanceEvery = time.Second

// maintenanceWriteTimeout bounds one send: an old process that does not
// read (an earlier release) must not hold this goroutine forever.
const maintenanceWriteTimeout = 5 * time.Second

// sendMaintenance sends the drains to the old process until it is gone.
func (p *predecessor) sendMaintenance(a *assembly.Gateway) {
	t := time.NewTicker(maintenanceEvery)
	defer t.Stop()
	var sent []cluster.MaintenanceDrain
	first := true
	for range t.C {
		p.mu.Lock()
		gone := p.gone
		p.mu.Unlock()
		if gone {
			return
		}
		ds := a.MaintenanceDrains()
		if !first && slices.Equal(ds, sent) {
			continue
		}
		m := message{T: "maintenance", Maintenance: []maintenanceDrain{}}
		for _, d := range ds {
			m.Maintenance = append(m.Maintenance, maintenanceDrain{Node: d.Node, Deadline: d.Deadline, Message: d.Message, By: d.By})
		}
		b, err := json.Marshal(m)
		if err != nil {
			p.log.Error("upgrade: encoding the drains for the previous process", "err", err)
			return
		}
		p.conn.SetWriteDeadline(time.Now().Add(maintenanceWriteTimeout))
		if _, err := p.conn.Write(append(b, '\n')); err != nil {
			if !errors.Is(err, net.ErrClosed) {
				p.log.Info("upgrade: the previous process takes no drains (an earlier release, or gone)", "err", err)
			}
			return
		}
		sent, first = ds, false
	}
}

// followMaintenance, in the old process, takes the drains the new process
// sends until the channel ends.
func (s *successor) followMaintenance(lr *lineReader, a *assembly.Gateway) {
	for {
		m, err := lr.next("maintenance")
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Warn("upgrade: reading drains from the new process; keeping the last ones", "err", err)
			}
			return
		}
		ds, err := checkMaintenance(m.Maintenance)
		if err != nil {
			s.log.Warn("upgrade: drains from the new process refused; keeping the last ones", "err", err)
			continue
		}
		a.SuccessorDrains(ds)
	}
}

// checkMaintenance refuses what the shared state would not hold: the
// other end is this gateway's own successor, but a message that reaches
// users' terminals is checked wherever it comes from.
func checkMaintenance(in []maintenanceDrain) ([]cluster.MaintenanceDrain, error) {
	out := make([]cluster.MaintenanceDrain, 0, len(in))
	for _, d := range in {
		if !node.ValidName(d.Node) {
			return nil, fmt.Errorf("node name %q", d.Node)
		}
		if err := cluster.CheckDrainText(d.Message, cluster.MaxDrainMessage); err != nil {
			return nil, fmt.Errorf("%s: message: %w", d.Node, err)
		}
		if err := cluster.CheckDrainText(d.By, cluster.MaxDrainMessage); err != nil {
			return nil, fmt.Errorf("%s: author: %w", d.Node, err)
		}
		out = append(out, cluster.MaintenanceDrain{Node: d.Node, Deadline: d.Deadline, Message: d.Message, By: d.By})
	}
	return out, nil
}
