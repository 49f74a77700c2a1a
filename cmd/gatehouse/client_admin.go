package main

import (
	"encoding/json"
	"flag"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/cmd/gatehouse/internal/client"
)

// adminAction is one action of an admin command: its JSON-RPC method, how it reads its
// arguments into params, and how a terminal shows its result (nil: as JSON).
type adminAction struct {
	usage  string
	method string
	// flags registers the action's own flags; params builds the request from them and
	// the positional arguments.
	flags  func(fs *flag.FlagSet) func(pos []string) (any, error)
	table  func(o *client.Output, res json.RawMessage) error
	admin  bool // on the admin listener (else the boundary)
	taskOp bool // the action follows a task's stream
}

var approvalColumns = client.Columns("ID", "id", "STATUS", fieldStatus, "METHOD", "method", "CALLER", "caller", "RULE", "rule", "MUTATION", "mutation", "EXPIRES", "expires", "DECIDED BY", "decided_by")

// actionList is the listing action of the admin commands; fieldStatus is a record's status
// (a column, a parameter and an action's name).
const (
	actionList  = "list"
	fieldStatus = "status"
)

// adminCommands are gatehouse approvals|revocations|keys|operator (the admin listener's
// JSON-RPC) and gatehouse tasks (the boundary's nekte.task.*, which only the task's owner
// reaches, and the operator's list of every caller's tasks).
var adminCommands = map[string]map[string]adminAction{
	"approvals": {
		actionList: {usage: "list [--all]", method: "admin.approvals.list", admin: true,
			flags: func(fs *flag.FlagSet) func([]string) (any, error) {
				all := fs.Bool("all", false, "also the recent decisions (the audit trail)")
				return func(pos []string) (any, error) {
					if err := noArgs(pos); err != nil {
						return nil, err
					}
					if *all {
						return map[string]bool{"include_decided": true}, nil
					}
					return nil, nil
				}
			},
			table: func(o *client.Output, res json.RawMessage) error {
				if err := o.ObjectsTable(res, "pending", approvalColumns, "no pending approvals"); err != nil {
					return err
				}
				var d struct {
					Decided json.RawMessage `json:"decided"`
				}
				if json.Unmarshal(res, &d) == nil && d.Decided != nil {
					_, _ = io.WriteString(o.Out, "\ndecided:\n")
					return o.ObjectsTable(d.Decided, "", append(slices.Clip(approvalColumns), client.Column{Header: "NOTE", Member: "note"}), "none")
				}
				return nil
			}},
		"approve": {usage: "approve ID [--note TEXT]", method: "admin.approvals.approve", admin: true,
			flags: idAndText("note", "why it is approved (kept in the audit trail)")},
		"deny": {usage: "deny ID [--reason TEXT]", method: "admin.approvals.deny", admin: true,
			flags: idAndText("reason", "why it is denied (kept in the audit trail)")},
	},
	"revocations": {
		actionList: {usage: "list", method: "admin.revocations.list", admin: true, flags: none,
			table: func(o *client.Output, res json.RawMessage) error {
				return o.ObjectsTable(res, "revocations", client.Columns("KIND", "kind", "JTI", "jti", "SUB", "sub", "EXPIRES", "expires_at", "REVOKED BY", "revoked_by", "REASON", "reason"), "no revocations")
			}},
		"add": {usage: "add --jti ID | --sub NAME [--ttl 24h | --expires-at T] [--reason TEXT]", method: "admin.revocations.add", admin: true,
			flags: func(fs *flag.FlagSet) func([]string) (any, error) {
				jti, sub := fs.String("jti", "", "revoke the token with this jti"), fs.String("sub", "", "revoke every credential of this subject")
				ttl := fs.Duration("ttl", 0, "how long the entry lasts")
				exp := fs.String("expires-at", "", "when the entry ends (RFC 3339)")
				reason := fs.String("reason", "", "why (kept with the entry)")
				return func(pos []string) (any, error) {
					if err := noArgs(pos); err != nil {
						return nil, err
					}
					p := jtiOrSub(*jti, *sub)
					if p == nil {
						return nil, client.Usagef("give exactly one of --jti and --sub")
					}
					if *ttl > 0 {
						p["ttl"] = ttl.String()
					}
					if *exp != "" {
						p["expires_at"] = *exp
					}
					if *reason != "" {
						p["reason"] = *reason
					}
					return p, nil
				}
			}},
		"remove": {usage: "remove --jti ID | --sub NAME", method: "admin.revocations.remove", admin: true,
			flags: func(fs *flag.FlagSet) func([]string) (any, error) {
				jti, sub := fs.String("jti", "", "the jti of the entry"), fs.String("sub", "", "the subject of the entry")
				return func(pos []string) (any, error) {
					if err := noArgs(pos); err != nil {
						return nil, err
					}
					if p := jtiOrSub(*jti, *sub); p != nil {
						return p, nil
					}
					return nil, client.Usagef("give exactly one of --jti and --sub")
				}
			}},
	},
	"keys": {
		actionList: {usage: "list", method: "admin.keys.list", admin: true, flags: none,
			table: func(o *client.Output, res json.RawMessage) error {
				return o.ObjectsTable(res, "keys", client.Columns("KID", "kid", "ALGORITHM", "algorithm", "STATE", "state", "CREATED", "created", "ACTIVATES", "activates", "RETIRES", "retires"), "no keys")
			}},
		"rotate": {usage: "rotate [--revoke] [--reason TEXT]", method: "admin.keys.rotate", admin: true,
			flags: func(fs *flag.FlagSet) func([]string) (any, error) {
				revoke := fs.Bool("revoke", false, "take every previous key out at once (tokens they signed stop verifying)")
				reason := fs.String("reason", "", "why (logged)")
				return func(pos []string) (any, error) {
					if err := noArgs(pos); err != nil {
						return nil, err
					}
					p := map[string]any{}
					if *revoke {
						p["revoke"] = true
					}
					if *reason != "" {
						p["reason"] = *reason
					}
					return p, nil
				}
			}},
	},
	"tasks": {
		actionList: {usage: "list [--status S]   (every caller's, on the admin listener)", method: "admin.tasks.list", admin: true,
			flags: func(fs *flag.FlagSet) func([]string) (any, error) {
				status := fs.String(fieldStatus, "", "only tasks in this status (running, completed, failed, cancelled, suspended…)")
				return func(pos []string) (any, error) {
					if err := noArgs(pos); err != nil || *status == "" {
						return nil, err
					}
					return map[string]any{fieldStatus: *status}, nil
				}
			},
			table: func(o *client.Output, res json.RawMessage) error {
				return o.ObjectsTable(res, "tasks", client.Columns("TASK", "task_id", "OWNER", "owner", "CAP", "cap", "STATUS", fieldStatus, "ATTEMPT", "attempt"), "no tasks")
			}},
		fieldStatus: {usage: "status TASK_ID", method: "nekte.task.status", flags: taskID("")},
		"cancel":    {usage: "cancel TASK_ID [--reason TEXT]", method: "nekte.task.cancel", flags: taskID("reason")},
		"suspend":   {usage: "suspend TASK_ID", method: "nekte.task.suspend", flags: taskID("")},
		"resume":    {usage: "resume TASK_ID", method: "nekte.task.resume", flags: taskID("")},
		"stream":    {usage: "stream TASK_ID", method: "nekte.task.stream", flags: taskID(""), taskOp: true},
	},
}

// operatorCommand is gatehouse operator: the admin listener's operator methods (scope
// server.admin.operator_scope), the ones the console calls.
var operatorCommand = map[string]adminAction{
	fieldStatus: {usage: "status", method: "admin.status", admin: true, flags: none},
	"backends":  {usage: "backends", method: "admin.backends", admin: true, flags: none},
	"catalog":   {usage: "catalog", method: "admin.catalog", admin: true, flags: none},
	"errors":    {usage: "errors", method: "admin.errors.recent", admin: true, flags: none},
	"reload":    {usage: "reload", method: "admin.config.reload", admin: true, flags: none},
	"cancel":    {usage: "cancel TASK_ID [--reason TEXT]   (any caller's task)", method: "admin.tasks.cancel", admin: true, flags: taskID("reason")},
	"resume":    {usage: "resume TASK_ID   (any caller's task)", method: "admin.tasks.resume", admin: true, flags: taskID("")},
}

func init() { adminCommands["operator"] = operatorCommand }

func none(*flag.FlagSet) func([]string) (any, error) {
	return func(pos []string) (any, error) { return nil, noArgs(pos) }
}

func noArgs(pos []string) error {
	if len(pos) > 0 {
		return client.Usagef("unexpected argument %q", pos[0])
	}
	return nil
}

func jtiOrSub(jti, sub string) map[string]any {
	switch {
	case jti != "" && sub == "":
		return map[string]any{"jti": jti}
	case sub != "" && jti == "":
		return map[string]any{"sub": sub}
	}
	return nil
}

// idAndText reads `ID [--text T]` into {id, text?}.
func idAndText(text, help string) func(fs *flag.FlagSet) func([]string) (any, error) {
	return func(fs *flag.FlagSet) func([]string) (any, error) {
		t := fs.String(text, "", help)
		return func(pos []string) (any, error) {
			if len(pos) != 1 {
				return nil, client.Usagef("want one approval id")
			}
			p := map[string]any{"id": pos[0]}
			if *t != "" {
				p[text] = *t
			}
			return p, nil
		}
	}
}

// taskID reads `TASK_ID [--text T]` into {task_id, text?}.
func taskID(text string) func(fs *flag.FlagSet) func([]string) (any, error) {
	return func(fs *flag.FlagSet) func([]string) (any, error) {
		var t *string
		if text != "" {
			t = fs.String(text, "", "why (kept with the task)")
		}
		return func(pos []string) (any, error) {
			if len(pos) != 1 {
				return nil, client.Usagef("want one task id")
			}
			p := map[string]any{"task_id": pos[0]}
			if t != nil && *t != "" {
				p[text] = *t
			}
			return p, nil
		}
	}
}

// adminCmd runs `gatehouse NAME ACTION ...` of adminCommands.
func adminCmd(name string, args []string, stdout, stderr io.Writer) int {
	actions := adminCommands[name]
	usage := func() string {
		var b strings.Builder
		b.WriteString("usage:")
		for _, a := range sortedKeys(actions) {
			b.WriteString("\n  gatehouse " + name + " " + actions[a].usage)
		}
		return b.String()
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		return finish(nil, stderr, client.Usagef("%s", usage()))
	}
	act, ok := actions[args[0]]
	if !ok {
		return finish(nil, stderr, client.Usagef("unknown action %q\n%s", args[0], usage()))
	}
	fs := flag.NewFlagSet(name+" "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cc clientCmd
	cc.flags.register(fs, act.admin, 30*time.Second)
	fs.BoolVar(&cc.flags.json, "json", false, "print the result as JSON, even on a terminal")
	build := act.flags(fs)
	pos, err := cc.setup(fs, args[1:], stdout, stderr)
	if err != nil {
		return finish(cc.out, stderr, err)
	}
	p, err := build(pos)
	if err != nil {
		return finish(cc.out, stderr, err)
	}
	ctx, stop := interruptible()
	defer stop()
	if act.taskOp {
		id := p.(map[string]any)["task_id"].(string)
		noTimeout, _ := client.New(client.Options{URL: cc.flags.url, Token: cc.flags.token, APIKey: cc.flags.apiKey})
		return finish(cc.out, stderr, noTimeout.StreamTask(ctx, id, cc.out.NewRenderer(id)))
	}
	var params json.RawMessage
	if p != nil {
		params, _ = json.Marshal(p)
	}
	res, err := cc.client.Call(ctx, act.method, params)
	if err == nil {
		if act.table != nil && cc.out.TTY && !cc.flags.json {
			err = act.table(cc.out, res)
		} else {
			err = cc.out.JSON(res)
		}
	}
	return finish(cc.out, stderr, interrupted(ctx, err))
}
