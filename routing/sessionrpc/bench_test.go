package sessionrpc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/gatehouse-dev/gatehouse/codecs/sessionrpc"
	"github.com/gatehouse-dev/gatehouse/demo"
	routing "github.com/gatehouse-dev/gatehouse/routing/sessionrpc"
)

// benchEvents is the number of extra text-delta events of each benchmarked request.
const benchEvents = 500

// BenchmarkUpstream measures events/s of a demo-chat reply (benchEvents text deltas, no
// tool call) read directly by a client of the upstream (direct: a connection per request,
// each message decoded, as the target does) and through the Upstream target (proxied:
// Invoke and Recv until the end), over each transport. proxied ÷ direct is the cost of
// the proxy hop; `make bench` reports it.
func BenchmarkUpstream(b *testing.B) {
	cs := startChat(b, demo.ChatOptions{})
	payload := `{"message":"bench","options":{"noTool":true,"repeat":` + strconv.Itoa(benchEvents) + `}}`
	for _, tr := range transports {
		b.Run("direct/"+tr, func(b *testing.B) {
			read := directWS
			if tr == routing.TransportSSE {
				read = directSSE
			}
			var events int
			start := time.Now()
			for i := 0; b.Loop(); i++ {
				events += read(b, cs.url(tr), "rpc_"+strconv.Itoa(i), payload)
			}
			b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
		})
		b.Run("proxied/"+tr, func(b *testing.B) {
			u := newUpstream(b, routing.UpstreamConfig{URL: cs.url(tr)})
			ctx := context.Background()
			var events int
			start := time.Now()
			for b.Loop() {
				res, err := u.Invoke(ctx, call(payload))
				if err != nil {
					b.Fatal(err)
				}
				for {
					_, err := res.Stream.Recv(ctx)
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					events++
				}
				_ = res.Stream.Close()
			}
			b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
		})
	}
}

// terminal decodes one message and reports whether it ends the request; it counts as an
// event when it is a chat.event or the terminal.
func terminal(b *testing.B, msg []byte) (end, event bool) {
	var env sessionrpc.Envelope
	if err := json.Unmarshal(msg, &env); err != nil {
		b.Fatal(err)
	}
	switch env.Type {
	case sessionrpc.TypeChatDone, sessionrpc.TypeChatError:
		return true, true
	case sessionrpc.TypeChatEvent:
		return false, true
	}
	return false, false
}

func directWS(b *testing.B, url, id, payload string) int {
	conn, resp, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		b.Fatal(err)
	}
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	defer func() { _ = conn.Close() }()
	if err := conn.WriteMessage(websocket.TextMessage, []byte(`{"id":"`+id+`","type":"chat.start","payload":`+payload+`}`)); err != nil {
		b.Fatal(err)
	}
	n := 0
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			b.Fatal(err)
		}
		end, event := terminal(b, msg)
		if event {
			n++
		}
		if end {
			return n
		}
	}
}

func directSSE(b *testing.B, url, id, payload string) int {
	resp, err := http.Post(url+"/session/chat", "application/json",
		strings.NewReader(`{"id":"`+id+`","type":"chat.start","payload":`+payload+`}`))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	n := 0
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		end, event := terminal(b, data)
		if event {
			n++
		}
		if end {
			return n
		}
	}
	b.Fatal("the event stream ended early")
	return n
}
