package gateway

// A login node drained for maintenance (internal/maintenance): its
// sessions through this gateway are told what is coming, one by one, and
// closed at the deadline with the reason. Notices go to interactive
// sessions only (proxy.Relay.Notify): a command, scp, sftp or rsync gets
// none in its streams, and is closed all the same.

// NodeSessions lists the IDs of the live sessions on node.
func (g *Gateway) NodeSessions(node string) []string {
	var out []string
	for _, s := range g.sessions.all() {
		if s.Node == node {
			out = append(out, s.ID)
		}
	}
	return out
}

// NotifySession writes line to every interactive terminal of session id
// and returns how many it wrote to (0 for a session without one, or gone).
func (g *Gateway) NotifySession(id, line string) int {
	if s := g.sessions.get(id); s != nil {
		return s.relay.Notify(line)
	}
	return 0
}

// CloseSession closes session id, telling its interactive terminals why,
// and reports whether it was there.
func (g *Gateway) CloseSession(id, reason string) bool {
	s := g.sessions.get(id)
	if s == nil {
		return false
	}
	s.relay.Close(reason)
	return true
}

// get returns the live session id, or nil.
func (t *sessionTable) get(id string) *Session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sessions[id]
}
