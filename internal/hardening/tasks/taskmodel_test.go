package tasks

import (
	"fmt"
	"slices"
	"strings"
)

// state is a NEKTE task state (docs/nekte-tasks.md, Lifecycle).
type state string

const (
	pending   state = "pending"
	accepted  state = "accepted"
	running   state = "running"
	suspended state = "suspended"
	completed state = "completed"
	failed    state = "failed"
	cancelled state = "cancelled"
	// gone is a finished task whose record has expired (tasks.record_ttl): every call on it
	// is -32009, as for a task that never was.
	gone state = "(record expired)"
)

func (s state) terminal() bool { return s == completed || s == failed || s == cancelled }

// moves are the state machine's allowed transitions; terminal states have none.
var moves = map[state][]state{
	pending:   {accepted, cancelled, failed},
	accepted:  {running, cancelled, failed},
	running:   {completed, failed, suspended, cancelled},
	suspended: {running, cancelled, failed},
}

func allowedMove(from, to state) bool { return slices.Contains(moves[from], to) }

// stateSet is the set of states a task may be in as far as the test knows: a task moves by
// itself (its run ends) between two operations.
type stateSet map[state]bool

func setOf(ss ...state) stateSet {
	s := stateSet{}
	for _, x := range ss {
		s[x] = true
	}
	return s
}

func (s stateSet) String() string {
	var out []string
	for x := range s {
		out = append(out, string(x))
	}
	slices.Sort(out)
	return "{" + strings.Join(out, ",") + "}"
}

// taskModel is the reference model of one task: the states it may be in, and how its run
// ends by itself (completed for a good input, failed for a bad one).
type taskModel struct {
	ends state
	// expiring is set while the task's record may have expired (record_ttl has passed
	// since it was delegated): a finished task may then be gone.
	expiring bool
}

// closure adds the states a task reaches without being asked: pending → accepted →
// running → its end. Suspended and terminal states never move by themselves.
func (m *taskModel) closure(s stateSet) stateSet {
	out := stateSet{}
	for x := range s {
		out[x] = true
		switch x {
		case pending:
			out[accepted], out[running], out[m.ends] = true, true, true
		case accepted:
			out[running], out[m.ends] = true, true
		case running:
			out[m.ends] = true
		}
	}
	return out
}

// op is one operation on a task and its observed outcome: the status it answered
// (status), the previous status a move answered, or an error code with the status the
// error names (data.status) when it names one.
type op struct {
	kind      string // status, cancel, suspend, resume, delegate (a duplicate), other (another subject's call)
	okStatus  state  // status: the status; cancel/suspend/resume: the new status
	prev      state  // a move's previous_status
	errCode   int
	errStatus state
	raw       string
}

func (o op) String() string {
	if o.errCode != 0 {
		return fmt.Sprintf("%s → error %d (status %q) %s", o.kind, o.errCode, o.errStatus, o.raw)
	}
	return fmt.Sprintf("%s → %s (previous %q)", o.kind, o.okStatus, o.prev)
}

// apply checks o's outcome against a task that may be in any state of may (already
// closed over its own moves), and returns the states it may be in afterwards, or an
// error saying why the outcome is not allowed.
func (m *taskModel) apply(may stateSet, o op) (stateSet, error) {
	from := func(s state) (stateSet, error) {
		if !may[s] {
			return nil, fmt.Errorf("%s: the task cannot be %s (it may be %s)", o, s, may)
		}
		return nil, nil
	}
	if m.expiring && o.kind != "other" && o.errCode == -32009 {
		for x := range may {
			if x.terminal() || x == gone {
				return setOf(gone), nil
			}
		}
	}
	if may[gone] && len(may) == 1 && o.kind != "other" {
		return nil, fmt.Errorf("%s: the task's record has expired, every call must be -32009", o)
	}
	switch o.kind {
	case "status":
		if o.errCode != 0 {
			return nil, fmt.Errorf("%s: status of an existing task failed", o)
		}
		if _, err := from(o.okStatus); err != nil {
			return nil, err
		}
		return m.closure(setOf(o.okStatus)), nil
	case "other":
		if o.errCode != -32009 {
			return nil, fmt.Errorf("%s: another subject's call must be -32009 Task not found", o)
		}
		return may, nil
	case "delegate":
		if o.errCode != -32602 {
			return nil, fmt.Errorf("%s: a duplicate task id must be -32602", o)
		}
		return may, nil
	case "cancel", "suspend", "resume":
		var ok func(state) bool
		want, code := cancelled, -32010
		switch o.kind {
		case "cancel":
			ok = func(s state) bool { return !s.terminal() }
		case "suspend":
			ok, want, code = func(s state) bool { return s == running }, suspended, -32011
		case "resume":
			ok, want, code = func(s state) bool { return s == suspended }, running, -32011
		}
		if o.errCode == 0 {
			if o.okStatus != want || !ok(o.prev) {
				return nil, fmt.Errorf("%s: a successful %s answers %s from a state it may leave", o, o.kind, want)
			}
			if _, err := from(o.prev); err != nil {
				return nil, err
			}
			return m.closure(setOf(want)), nil
		}
		if o.errCode != code {
			return nil, fmt.Errorf("%s: a refused %s is %d", o, o.kind, code)
		}
		if o.errStatus == "" {
			return nil, fmt.Errorf("%s: the refusal names no status", o)
		}
		if ok(o.errStatus) {
			return nil, fmt.Errorf("%s: refused although %s allows %s", o, o.errStatus, o.kind)
		}
		if _, err := from(o.errStatus); err != nil {
			return nil, err
		}
		return m.closure(setOf(o.errStatus)), nil
	}
	return nil, fmt.Errorf("unknown operation %q", o.kind)
}

// applyRace checks two operations that ran at the same time: some order of the two must
// explain both outcomes. It returns the union of the states every such order leaves.
func (m *taskModel) applyRace(may stateSet, a, b op) (stateSet, error) {
	out := stateSet{}
	var errs []string
	for _, order := range [][2]op{{a, b}, {b, a}} {
		s1, err := m.apply(may, order[0])
		if err == nil {
			var s2 stateSet
			if s2, err = m.apply(s1, order[1]); err == nil {
				for x := range s2 {
					out[x] = true
				}
				continue
			}
		}
		errs = append(errs, err.Error())
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no order explains the race: %s", strings.Join(errs, "; "))
	}
	return out, nil
}
