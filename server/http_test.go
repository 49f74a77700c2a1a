package server

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestHTTPBoundaryRefusals(t *testing.T) {
	ts := start(t, baseConfig+"jsonrpc: {max_body_bytes: 128}\n", nil)
	small := `{"jsonrpc":"2.0","method":"get_data","id":1}`
	exact := small[:len(small)-1] + strings.Repeat(" ", 128-len(small)) + "}"
	if len(exact) != 128 {
		t.Fatalf("exact body is %d bytes", len(exact))
	}
	tests := []struct {
		name        string
		method      string
		path        string
		contentType string
		body        string
		header      []string
		status      int
		code        int
	}{
		{"body at the limit is served", "POST", "/rpc", "application/json", exact, nil, 200, 0},
		{"body one byte over is refused", "POST", "/rpc", "application/json", exact + " ", nil, 413, -32027},
		{"wrong content type", "POST", "/rpc", "text/plain", small, nil, 415, -32026},
		{"json with a charset", "POST", "/rpc", "application/json; charset=utf-8", small, nil, 200, 0},
		{"json with another charset", "POST", "/rpc", "application/json; charset=latin1", small, nil, 415, -32026},
		{"GET on /rpc", "GET", "/rpc", "", "", nil, 405, -32600},
		{"unknown path", "POST", "/nope", "application/json", small, nil, 404, -32600},
		{"bad deadline header", "POST", "/rpc", "application/json", small, []string{"X-Deadline-Ms", "soon"}, 400, -32600},
		{"deadline header in the past", "POST", "/rpc", "application/json", small, []string{"X-Deadline-Ms", "1000"}, 200, -32000},
		{"unverifiable bearer", "POST", "/rpc", "application/json", small, []string{"Authorization", "Bearer abc"}, 401, 4001},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, ts.base+tt.path, strings.NewReader(tt.body))
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			for i := 0; i+1 < len(tt.header); i += 2 {
				req.Header.Set(tt.header[i], tt.header[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			var body strings.Builder
			_, _ = fmt.Fprint(&body, readAll(t, resp))
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body.String())
			}
			r := decodeOne(t, body.String())
			if tt.code == 0 {
				if r.Error != nil {
					t.Fatalf("unexpected error %+v", r.Error)
				}
				return
			}
			if r.Error == nil || r.Error.Code != tt.code {
				t.Fatalf("got %s, want code %d", body.String(), tt.code)
			}
			if len(fmt.Sprint(r.Error.Data["trace_id"])) != 32 {
				t.Errorf("error.data.trace_id missing: %s", body.String())
			}
			if tt.status == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

func TestNoAuthConfiguredRefusesEverything(t *testing.T) {
	ts := start(t, strings.Replace(baseConfig, "auth:\n  anonymous: {}\n", "", 1), nil)
	status, hdr, body := ts.post(`{"jsonrpc":"2.0","method":"get_data","id":1}`)
	if status != http.StatusUnauthorized || !strings.Contains(body, "4001") || hdr.Get("WWW-Authenticate") == "" {
		t.Fatalf("got %d %s", status, body)
	}
}

func TestHeaderTooLarge(t *testing.T) {
	ts := start(t, baseConfig, nil)
	c, err := net.Dial("tcp", strings.TrimPrefix(ts.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	// Write in the background and read at once: the server answers and closes before it
	// has read everything, and a blocked writer must not hide its answer.
	go func() {
		_, _ = fmt.Fprintf(c, "POST /rpc HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", DefaultMaxHeaderBytes+8192))
	}()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d, want 431", resp.StatusCode)
	}
}

// TestSlowloris checks a client dribbling its headers is cut off at read_header_timeout
// while normal clients are served.
func TestSlowloris(t *testing.T) {
	ts := start(t, strings.Replace(baseConfig, `boundary: {addr: "127.0.0.1:0"}`,
		`boundary: {addr: "127.0.0.1:0", read_header_timeout: 300ms, max_connections: 4}`, 1), nil)
	addr := strings.TrimPrefix(ts.base, "http://")
	var slow []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		_, _ = fmt.Fprint(c, "POST /rpc HTTP/1.1\r\nHost: x\r\n")
		slow = append(slow, c)
	}
	// A normal call gets through while three slow connections are open.
	if status, _, _ := ts.post(`{"jsonrpc":"2.0","method":"get_data","id":1}`); status != 200 {
		t.Fatalf("normal call: %d", status)
	}
	startWait := time.Now()
	for _, c := range slow {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			_, _ = fmt.Fprint(c, "X-Drip: 1\r\n") // keeps sending, but never finishes the headers
			if _, err := bufio.NewReader(c).ReadByte(); err != nil {
				break
			}
		}
	}
	if waited := time.Since(startWait); waited > 3*time.Second {
		t.Fatalf("slow connections held for %v", waited)
	}
}

func TestMaxConnections(t *testing.T) {
	ts := start(t, strings.Replace(baseConfig, `boundary: {addr: "127.0.0.1:0"}`,
		`boundary: {addr: "127.0.0.1:0", max_connections: 2, read_header_timeout: 2s}`, 1), nil)
	addr := strings.TrimPrefix(ts.base, "http://")
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// A third connection is accepted by the kernel but not served until one is freed.
	c3, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c3.Close() }()
	req := "POST /rpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 44\r\n\r\n" +
		`{"jsonrpc":"2.0","method":"get_data","id":1}`
	_, _ = fmt.Fprint(c3, req)
	_ = c3.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := bufio.NewReader(c3).ReadByte(); err == nil {
		t.Fatal("a connection past max_connections was served")
	}
	for _, c := range held {
		_ = c.Close()
	}
	_ = c3.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c3), nil)
	if err != nil {
		t.Fatalf("after freeing slots: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestDeadlineHeaderBoundsTheCall(t *testing.T) {
	p := &probe{delay: 2 * time.Second}
	ts := start(t, baseConfig, probes{"slow": p}.asTargets())
	deadline := time.Now().Add(300 * time.Millisecond).UnixMilli()
	began := time.Now()
	_, _, body := ts.post(`{"jsonrpc":"2.0","method":"slow","id":1}`, "X-Deadline-Ms", strconv.FormatInt(deadline, 10))
	if took := time.Since(began); took > time.Second {
		t.Fatalf("the gateway waited %v past a 300ms deadline", took)
	}
	r := decodeOne(t, body)
	if r.Error == nil || r.Error.Code != -32000 {
		t.Fatalf("got %s, want DEADLINE_EXCEEDED", body)
	}
}
