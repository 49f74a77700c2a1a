package nekte_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/codecs/nekte"
	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/routing/capability"
	rn "github.com/gatehouse-dev/gatehouse/routing/nekte"
	"github.com/gatehouse-dev/gatehouse/schemas"
)

func share(id, perms, extra string) string {
	return `{"action":"share","envelope":{"id":"` + id + `","data":{"secret":"marker-` + id + `"},"permissions":` + perms + `,"ttl_s":60` + extra + `}}`
}

const (
	permsAll     = `{"forward":true,"persist":true,"derive":true}`
	permsLocal   = `{"forward":true,"persist":false,"derive":true}`
	permsNoFwd   = `{"forward":false,"persist":true,"derive":true}`
	permsNoDeriv = `{"forward":true,"persist":true,"derive":false}`
)

// b64 encodes an owner as the store's keys do.
func b64(owner string) string { return base64.RawURLEncoding.EncodeToString([]byte(owner)) }

func deterministic(c *capability.Capability) { c.Deterministic = true }

// kvHolds reports whether any value the shared store holds under one of keys contains s.
func (e *env) kvHolds(t *testing.T, key, s string) bool {
	t.Helper()
	v, ok, err := e.kv.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return ok && strings.Contains(string(v), s)
}

func TestContextShareRequestRevoke(t *testing.T) {
	e := newEnv(t)
	s := e.service(fastTasks())
	other := e.serviceWith(fastTasks(), e.invoker)
	tests := []struct {
		name, perms string
		durable     bool
	}{
		{"persist", permsAll, true},
		{"no persist", permsLocal, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := strings.ReplaceAll(tt.name, " ", "-")
			if got := mustCall(t, s, "alice", nekte.MethodContext, share(id, tt.perms, "")); got != `{"id":"`+id+`","status":"stored","ttl_s":60}` {
				t.Fatalf("share %s", got)
			}
			e.clock.Advance(15 * time.Second)
			want := `{"id":"` + id + `","data":{"secret":"marker-` + id + `"},"permissions":` + tt.perms + `,"ttl_s":45}`
			if got := mustCall(t, s, "alice", nekte.MethodContext, `{"action":"request","envelope":{"id":"`+id+`"}}`); got != want {
				t.Fatalf("request %s, want %s", got, want)
			}
			if held := e.kvHolds(t, "nekte:ctx:"+b64("alice")+":"+id, "marker-"+id); held != tt.durable {
				t.Fatalf("in the shared store: %v, want %v", held, tt.durable)
			}
			notFound := `{"id":"` + id + `","status":"not_found"}`
			fromOther := mustCall(t, other, "alice", nekte.MethodContext, `{"action":"request","envelope":{"id":"`+id+`"}}`)
			if (fromOther == notFound) == tt.durable {
				t.Fatalf("another replica got %s", fromOther)
			}
			if got := mustCall(t, s, "bob", nekte.MethodContext, `{"action":"request","envelope":{"id":"`+id+`"}}`); got != notFound {
				t.Fatalf("another owner got %s", got)
			}
			if got := mustCall(t, s, "alice", nekte.MethodContext, `{"action":"revoke","envelope":{"id":"`+id+`"}}`); got != `{"id":"`+id+`","status":"revoked"}` {
				t.Fatalf("revoke %s", got)
			}
			if got := mustCall(t, s, "alice", nekte.MethodContext, `{"action":"request","envelope":{"id":"`+id+`"}}`); got != notFound {
				t.Fatalf("request after revoke %s", got)
			}
			if got := mustCall(t, s, "alice", nekte.MethodContext, `{"action":"revoke","envelope":{"id":"`+id+`"}}`); got != notFound {
				t.Fatalf("revoke again %s", got)
			}
		})
	}
}

func TestContextExpiry(t *testing.T) {
	e := newEnv(t)
	s := e.service(fastTasks())
	tests := []struct {
		name    string
		after   time.Duration
		want    string
		expired bool
	}{
		{"a second before", 59 * time.Second, `"ttl_s":1}`, false},
		{"at the ttl", 60 * time.Second, "", true},
		{"within the grace", 30 * time.Minute, "", true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "c" + string(rune('0'+i))
			mustCall(t, s, "alice", nekte.MethodContext, share(id, permsLocal, ""))
			e.clock.Advance(tt.after)
			res, err := call(t, s, "alice", nekte.MethodContext, `{"action":"request","envelope":{"id":"`+id+`"}}`)
			if tt.expired {
				if ge := wantCode(t, err, schemas.CodeContextExpired); ge.Message() != "Context expired: "+id {
					t.Fatalf("message %q", ge.Message())
				}
				_, err = call(t, s, "alice", nekte.MethodDelegate, `{"task":{"id":"t-`+id+`","desc":"","timeout_ms":0,"cap":"echo"},"context":{"id":"`+id+`"}}`)
				wantCode(t, err, schemas.CodeContextExpired)
				return
			}
			if err != nil || !strings.HasSuffix(string(res.Value), tt.want) {
				t.Fatalf("request: %v %s", err, res.Value)
			}
		})
	}
}

func TestContextTTLBounds(t *testing.T) {
	e := newEnv(t)
	s := e.service(fastTasks())
	if got := mustCall(t, s, "a", nekte.MethodContext, `{"action":"share","envelope":{"id":"d","data":1,"permissions":{},"ttl_s":0}}`); got != `{"id":"d","status":"stored","ttl_s":3600}` {
		t.Fatalf("default ttl: %s", got)
	}
	if got := mustCall(t, s, "a", nekte.MethodContext, `{"action":"share","envelope":{"id":"m","data":1,"permissions":{},"ttl_s":999999}}`); got != `{"id":"m","status":"stored","ttl_s":86400}` {
		t.Fatalf("capped ttl: %s", got)
	}
}

// contextCap is a capability that answers with the context envelope it was given.
func contextCap(ctx context.Context, _ json.RawMessage) (*gateway.Result, error) {
	env, ok := rn.EnvelopeFrom(ctx)
	if !ok {
		return gateway.NewResult([]byte(`{"context":null}`)), nil
	}
	b, _ := json.Marshal(map[string]any{"context": env.Data})
	return gateway.NewResult(b), nil
}

func TestDelegateContextPermissions(t *testing.T) {
	e := newEnv(t)
	e.capability("ctx", contextCap)
	s := e.service(fastTasks())
	mustCall(t, s, "alice", nekte.MethodContext, share("shared-all", permsAll, ""))
	mustCall(t, s, "alice", nekte.MethodContext, share("shared-nofwd", permsNoFwd, ""))
	mustCall(t, s, "alice", nekte.MethodContext, share("shared-scoped", permsNoFwd, `,"scope":["ctx"]`))
	tests := []struct {
		name, context string
		code          schemas.Code
		sees          string
	}{
		{"shared, forward", `{"id":"shared-all"}`, 0, `{"secret":"marker-shared-all"}`},
		{"shared, no forward", `{"id":"shared-nofwd"}`, schemas.CodeContextPermissionDenied, ""},
		{"shared, no forward, in scope", `{"id":"shared-scoped"}`, 0, `{"secret":"marker-shared-scoped"}`},
		{"shared, unknown", `{"id":"nope"}`, schemas.CodeContextExpired, ""},
		{"inline, no forward", `{"data":{"k":1},"permissions":{"forward":false,"persist":false,"derive":true},"ttl_s":60}`, schemas.CodeContextPermissionDenied, ""},
		{"inline, no forward, other scope", `{"data":{"k":1},"permissions":{"forward":false,"persist":false,"derive":true},"ttl_s":60,"scope":["echo"]}`, schemas.CodeContextPermissionDenied, ""},
		{"inline, no forward, in scope", `{"data":{"k":2},"permissions":{"forward":false,"persist":false,"derive":true},"ttl_s":60,"scope":["ctx"]}`, 0, `{"k":2}`},
		{"inline, forward", `{"data":{"k":3},"permissions":{"forward":true,"persist":true,"derive":true},"ttl_s":60}`, 0, `{"k":3}`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := "t-" + string(rune('a'+i))
			params := `{"task":{"id":"` + id + `","desc":"","timeout_ms":0,"cap":"ctx"},"context":` + tt.context + `}`
			res, err := call(t, s, "alice", nekte.MethodDelegate, params)
			if tt.code != 0 {
				wantCode(t, err, tt.code)
				if _, err := call(t, s, "alice", nekte.MethodTaskStatus, `{"task_id":"`+id+`"}`); codeOf(err) != schemas.CodeTaskNotFound {
					t.Fatalf("a refused delegate left a task: %v", err)
				}
				return
			}
			evs := openStream(t)(res, err).rest()
			last := evs[len(evs)-1]
			if last.Event != nekte.EventComplete || !strings.Contains(string(last.Data), `"context":`+tt.sees) {
				t.Fatalf("complete %s, want the capability to see %s", last.Data, tt.sees)
			}
		})
	}
}

func TestPersistFalseNeverReachesTheStore(t *testing.T) {
	e := newEnv(t)
	b := newBlocker(`{}`)
	e.capability("job", b.run)
	s := e.service(fastTasks())
	params := `{"task":{"id":"t-1","desc":"","timeout_ms":0,"cap":"job"},"context":{"id":"c","data":{"secret":"do-not-store"},"permissions":{"forward":true,"persist":false,"derive":true},"ttl_s":60}}`
	openStream(t)(call(t, s, "alice", nekte.MethodDelegate, params))
	waitFor(t, b.started, "the task to start")
	mustCall(t, s, "alice", "nekte.task.suspend", `{"task_id":"t-1"}`)
	if e.kvHolds(t, "nekte:task:"+b64("alice")+":t-1", "do-not-store") {
		t.Fatal("the task record in the shared store holds persist: false data")
	}
	// Another replica cannot resume it: the envelope stayed in the first process.
	other := e.serviceWith(fastTasks(), e.invoker)
	_, err := call(t, other, "alice", nekte.MethodTaskResume, `{"task_id":"t-1"}`)
	wantCode(t, err, schemas.CodeContextExpired)
	// The process holding it can.
	mustCall(t, s, "alice", nekte.MethodTaskResume, `{"task_id":"t-1"}`)
	close(b.release)
	waitStatus(t, s, "alice", "t-1", nekte.TaskCompleted)
}

func TestDeriveFalseResultNotKept(t *testing.T) {
	e := newEnv(t)
	e.capability("secret", returns(`{"answer":"derived-secret"}`), deterministic)
	s := e.service(fastTasks())
	mustCall(t, s, "alice", nekte.MethodContext, share("nd", permsNoDeriv, ""))
	live := mustDelegate(t, s, "alice", `{"task":{"id":"t-1","desc":"","timeout_ms":0,"cap":"secret"},"context":{"id":"nd"}}`)
	if last := live[len(live)-1]; !strings.Contains(string(last.Data), "derived-secret") {
		t.Fatalf("the live stream's complete %s lacks the result", last.Data)
	}
	if e.kvHolds(t, "nekte:task:"+b64("alice")+":t-1", "derived-secret") {
		t.Fatal("the task record keeps a result derived from a derive: false context")
	}
	replay := openStream(t)(call(t, s, "alice", "nekte.task.stream", `{"task_id":"t-1"}`)).rest()
	if got := string(replay[len(replay)-1].Data); !strings.Contains(got, `"out":{}`) {
		t.Fatalf("replayed complete %s, want its out withheld", got)
	}
	_, err := call(t, s, "alice", nekte.MethodVerify, `{"task_id":"t-1","checks":["sample"]}`)
	wantCode(t, err, schemas.CodeContextPermissionDenied)
	if got := mustCall(t, s, "alice", nekte.MethodVerify, `{"task_id":"t-1","checks":["hash"]}`); !strings.Contains(got, `"hash_valid":true`) {
		t.Fatalf("hash check %s", got)
	}
}

func TestContextDataBound(t *testing.T) {
	e := newEnv(t)
	cfg := fastTasks()
	cfg.Contexts.MaxDataBytes = 16
	s := e.service(cfg)
	at := `{"action":"share","envelope":{"id":"x","data":"` + strings.Repeat("a", 14) + `","permissions":{},"ttl_s":5}}`
	over := `{"action":"share","envelope":{"id":"x","data":"` + strings.Repeat("a", 15) + `","permissions":{},"ttl_s":5}}`
	mustCall(t, s, "a", nekte.MethodContext, at)
	_, err := call(t, s, "a", nekte.MethodContext, over)
	if ge := wantCode(t, err, schemas.CodeInvalidParams); ge.Data()["field"] != "envelope.data" {
		t.Fatalf("field %v", ge.Data()["field"])
	}
}
