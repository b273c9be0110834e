package audit

// Class says who can make an event happen, and so how freely it may be
// shed when audit storage runs short. Anyone on the network can make the
// gateway record as many failed authentications as they like; they must
// never push out the records of what authenticated people did. Every
// bounded buffer on the way to storage (the Logger's queues, the S3
// spool) gives each class a budget of its own.
type Class uint8

const (
	// ClassAuthenticated is everything someone accountable caused: logins
	// that proved who they are (let in or denied by policy), sessions,
	// backend failures, admin actions, the gateway's own records.
	ClassAuthenticated Class = iota
	// ClassUnauthenticated is a failed authentication: no proof of
	// identity, so no one answers for it, and a stranger can send any
	// number of them.
	ClassUnauthenticated

	numClasses = 2
)

// Classes lists every class, for metrics and reports.
var Classes = [numClasses]Class{ClassAuthenticated, ClassUnauthenticated}

// String is the class's stable name in metrics labels, logs and batch
// headers.
func (c Class) String() string {
	if c == ClassUnauthenticated {
		return "unauthenticated"
	}
	return "authenticated"
}

// ClassOf tells an event's class: an auth event whose result is fail is
// unauthenticated; everything else is authenticated (a proven login that
// could not be completed is recorded as error, never as fail).
func ClassOf(e Event) Class {
	if e.Type == TypeAuth && e.Result == ResultFail {
		return ClassUnauthenticated
	}
	return ClassAuthenticated
}
