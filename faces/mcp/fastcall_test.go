package mcpface

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// streamSession is a client session as the fast path sees it.
type streamSession struct {
	ch       chan mcp.JSONRPCNotification
	upgraded atomic.Bool
}

func (s *streamSession) Initialize()                                         {}
func (s *streamSession) Initialized() bool                                   { return true }
func (s *streamSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.ch }
func (s *streamSession) SessionID() string                                   { return "s" }
func (s *streamSession) UpgradeToSSEWhenReceiveNotification()                { s.upgraded.Store(true) }

// TestCallStream: notifications sent while a call runs, from other goroutines, reach the
// response as events in the order each sender sent them, before the final one; the
// response became an event stream, the session is marked as streaming (for the fast path
// and for mcp-go); what is sent after the call ended is dropped, and no goroutine is left.
func TestCallStream(t *testing.T) {
	for _, senders := range []int{0, 1, 3} {
		t.Run(strconv.Itoa(senders), func(t *testing.T) {
			rec := httptest.NewRecorder()
			sess := &streamSession{ch: make(chan mcp.JSONRPCNotification, 1)}
			ls := &liveSession{sess: sess}
			st := &callStream{w: rec, ls: ls, sess: ls.sess, reqCtx: context.Background()}
			var wg sync.WaitGroup
			for s := range senders {
				wg.Go(func() {
					for i := range 10 {
						st.send(progressNotification(map[string]any{"progressToken": s, "progress": i}))
					}
				})
			}
			wg.Wait()
			st.finish()
			marked, upgraded := ls.sse.Load(), sess.upgraded.Load()
			st.send(progressNotification(map[string]any{"progressToken": "late", "progress": 1}))
			st.writeFinal([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`), true)
			body := rec.Body.String()
			if senders == 0 {
				if rec.Header().Get("Content-Type") != "text/event-stream" || marked || upgraded {
					t.Fatalf("no notification: headers %v, marked %v %v", rec.Header(), marked, upgraded)
				}
			} else if !marked || !upgraded {
				t.Fatal("the session is not marked as streaming")
			}
			events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
			if len(events) != senders*10+1 || !strings.Contains(events[len(events)-1], `"id":1`) || strings.Contains(body, "late") {
				t.Fatalf("%d events:\n%s", len(events), body)
			}
			for s := range senders {
				last := -1
				for _, ev := range events[:len(events)-1] {
					if !strings.HasPrefix(ev, "event: message\ndata: ") {
						t.Fatalf("event %q", ev)
					}
					if strings.Contains(ev, `"progressToken":`+strconv.Itoa(s)+"}") {
						i := strings.Index(ev, `"progress":`)
						n, _ := strconv.Atoi(ev[i+len(`"progress":`) : strings.IndexByte(ev[i:], ',')+i])
						if n <= last {
							t.Fatalf("sender %d: progress %d after %d", s, n, last)
						}
						last = n
					}
				}
				if last != 9 {
					t.Fatalf("sender %d: last progress %d", s, last)
				}
			}
		})
	}
}

func TestResultResponse(t *testing.T) {
	tests := []struct {
		name, result, want, err string
	}{
		{"compacted", "{ \"content\" : [ ] ,\n \"isError\":true }", `{"jsonrpc":"2.0","id":3,"result":{"content":[],"isError":true}}`, ""},
		{"escaped as encoding/json does", `{"content":[{"type":"text","text":"<a&b>"}]}`, `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"\u003ca\u0026b\u003e"}]}}`, ""},
		{"input required", `{"resultType":"input_required","inputRequests":{}}`, `{"jsonrpc":"2.0","id":3,"result":{"resultType":"input_required","inputRequests":{}}}`, ""},
		{"content named with an escape", `{"\u0063ontent":[]}`, `{"jsonrpc":"2.0","id":3,"result":{"\u0063ontent":[]}}`, ""},
		{"no content", `{"isError":false}`, "", "content is missing"},
		{"not an object", `[1]`, "", "failed to unmarshal response"},
		{"not JSON", `{"content":`, "", "failed to unmarshal response"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resultResponse("3", []byte(tt.result))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("%s, %v\nwant %s", got, err, tt.want)
			}
		})
	}
}
