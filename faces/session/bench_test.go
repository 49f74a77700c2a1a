package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/gorilla/websocket"

	wire "github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/gateway"
)

// benchEvents is how many events one benchmark request streams.
const benchEvents = 1000

// BenchmarkSessionEvents measures events/s through the face: a target streams
// benchEvents text-delta frames and a chat.done; "websocket" reads them as a client of GET
// /session (decoded, checked, re-enveloped, queued, written, read), "direct" reads the same
// frames straight from the target's stream, the baseline of the ratio.
func BenchmarkSessionEvents(b *testing.B) {
	e := newEnv(b, nil)
	n := fmt.Sprint(benchEvents)
	b.Run("websocket", func(b *testing.B) {
		c, resp, err := websocket.DefaultDialer.Dial("ws"+e.srv.URL[len("http"):]+Path, nil)
		if err != nil {
			b.Fatal(err)
		}
		_ = resp.Body.Close()
		defer c.Close()
		start, _ := json.Marshal(map[string]any{"id": "rpc_1", "type": "chat.start", "payload": map[string]any{"message": "events:" + n}})
		events := 0
		b.ResetTimer()
		for range b.N {
			if err := c.WriteMessage(websocket.TextMessage, start); err != nil {
				b.Fatal(err)
			}
			for {
				_, data, err := c.ReadMessage()
				if err != nil {
					b.Fatal(err)
				}
				var m struct {
					Type string `json:"type"`
				}
				if json.Unmarshal(data, &m) != nil {
					b.Fatalf("%s", data)
				}
				if m.Type == wire.TypeChatEvent {
					events++
				}
				if m.Type == wire.TypeChatDone || m.Type == wire.TypeChatError {
					if m.Type == wire.TypeChatError {
						b.Fatalf("%s", data)
					}
					break
				}
			}
		}
		b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("direct", func(b *testing.B) {
		params, _ := json.Marshal(map[string]any{"message": "events:" + n})
		events := 0
		ctx := context.Background()
		b.ResetTimer()
		for range b.N {
			res, err := e.target.Invoke(ctx, &gateway.Call{Method: "session.script", Params: params})
			if err != nil {
				b.Fatal(err)
			}
			for {
				msg, err := res.Stream.Recv(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				var m struct {
					Type    string          `json:"type"`
					Payload json.RawMessage `json:"payload"`
				}
				if json.Unmarshal(msg, &m) != nil {
					b.Fatal("frame")
				}
				if m.Type == wire.TypeChatEvent {
					events++
				}
			}
			_ = res.Stream.Close()
		}
		b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	})
}
