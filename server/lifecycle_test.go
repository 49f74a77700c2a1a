package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// load fires calls at the server from several clients (HTTP and WebSocket) until stopped,
// and counts successes and failures.
type load struct {
	ok, failed atomic.Int64
	firstErr   atomic.Value
	stop       chan struct{}
	wg         sync.WaitGroup
}

func startLoad(t *testing.T, ts *testServer, clients int) *load {
	l := &load{stop: make(chan struct{})}
	for i := range clients {
		l.wg.Go(func() {
			n := 0
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				n++
				body := fmt.Sprintf(`{"jsonrpc":"2.0","method":"subtract","params":[%d,%d],"id":%d}`, n+i, i, n)
				if err := callOnce(ts, body, fmt.Sprint(n)); err != nil {
					l.fail(err)
				} else {
					l.ok.Add(1)
				}
			}
		})
	}
	return l
}

func (l *load) fail(err error) {
	l.failed.Add(1)
	l.firstErr.CompareAndSwap(nil, err)
}

func (l *load) finish(t *testing.T) {
	t.Helper()
	close(l.stop)
	l.wg.Wait()
	if n := l.failed.Load(); n > 0 {
		t.Fatalf("%d of %d calls failed; first: %v", n, n+l.ok.Load(), l.firstErr.Load())
	}
	if l.ok.Load() < 20 {
		t.Fatalf("only %d calls made", l.ok.Load())
	}
	t.Logf("%d calls, none failed", l.ok.Load())
}

var loadClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

func callOnce(ts *testServer, body, wantResult string) error {
	req, _ := http.NewRequest(http.MethodPost, ts.base+"/rpc", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := loadClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	var b strings.Builder
	buf := make([]byte, 512)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(b.String(), `"result":`+wantResult+`,`) {
		return fmt.Errorf("status %d body %s", resp.StatusCode, b.String())
	}
	return nil
}

func TestReloadUnderLoadLosesNothing(t *testing.T) {
	dir := t.TempDir()
	cfgFor := func(maxBatch int) string {
		return baseConfig + fmt.Sprintf("batch: {max_size: %d}\n", maxBatch)
	}
	path := writeFile(t, dir, "gatehouse.yaml", cfgFor(10))
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ts := startConfig(t, cfg, nil)
	ts.MarkLoaded(path)
	l := startLoad(t, ts, 8)
	for i := range 20 {
		time.Sleep(15 * time.Millisecond)
		writeFile(t, dir, "gatehouse.yaml", cfgFor(2+i))
		if err := ts.ReloadFile(path); err != nil {
			t.Fatalf("reload %d: %v", i, err)
		}
		if i == 10 {
			writeFile(t, dir, "gatehouse.yaml", "server: {bogus: 1}\n")
			if err := ts.ReloadFile(path); err == nil {
				t.Fatal("an invalid file was accepted")
			}
			writeFile(t, dir, "gatehouse.yaml", " \n") // caught between truncate and write
			if err := ts.ReloadFile(path); err == nil {
				t.Fatal("an empty file was accepted on reload")
			}
		}
	}
	l.finish(t)
	// The last reload is in force: max_size 21.
	_, _, out := ts.post(batchOf(22, "get_data"))
	if r := decodeOne(t, out); r.Error == nil || r.Error.Data["max"] != float64(21) {
		t.Fatalf("last configuration not in force: %s", out)
	}
	if !strings.Contains(ts.logs.String(), "configuration reload refused") {
		t.Error("the refused reload was not logged")
	}
}

func TestWatchReloadsOnFileChange(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "gatehouse.yaml", baseConfig+"batch: {max_size: 3}\n")
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ts := startConfig(t, cfg, nil)
	ts.MarkLoaded(path)
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	go func() { watched <- ts.Watch(ctx, path) }()
	defer func() {
		cancel()
		if err := <-watched; err != nil {
			t.Error(err)
		}
	}()
	time.Sleep(50 * time.Millisecond) // let the watcher start
	writeFile(t, dir, "gatehouse.yaml.tmp", baseConfig+"batch: {max_size: 4}\n")
	if err := renameFile(dir+"/gatehouse.yaml.tmp", path); err != nil { // as editors and ConfigMaps do
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, _, out := ts.post(batchOf(4, "get_data"))
		if strings.HasPrefix(out, "[") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("file change not picked up: %s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestShutdownFinishesInFlightCalls(t *testing.T) {
	p := &probe{delay: 400 * time.Millisecond, started: make(chan string, 32)}
	ts := start(t, baseConfig, probes{"slow": p}.asTargets())
	const httpCalls, wsCalls = 8, 4
	var wg sync.WaitGroup
	errs := make(chan error, httpCalls+wsCalls)
	for i := range httpCalls {
		wg.Go(func() {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","method":"slow","id":%d}`, i)
			if err := callOnce(ts, body, `"ok"`); err != nil {
				errs <- err
			}
		})
	}
	c := dialWS(t, ts, nil)
	for i := range wsCalls {
		wsSend(t, c, fmt.Sprintf(`{"jsonrpc":"2.0","method":"slow","id":%d}`, 100+i))
	}
	for range httpCalls + wsCalls {
		<-p.started
	}
	ts.cancel() // what SIGTERM does in cmd/gatehouse

	// While draining, readiness says so.
	time.Sleep(50 * time.Millisecond)
	if resp, err := http.Get(ts.admin + "/readyz"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("readyz while draining: %v %v", resp, err)
	} else {
		_ = resp.Body.Close()
	}
	for range wsCalls {
		if r := decodeOne(t, wsRead(t, c, 5*time.Second)); r.Error != nil {
			t.Errorf("websocket call failed during shutdown: %+v", r.Error)
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := c.ReadMessage(); !strings.Contains(fmt.Sprint(err), "1001") {
		t.Errorf("websocket closed with %v, want 1001 going away", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("HTTP call failed during shutdown: %v", err)
	}
	if err := ts.stop(); err != nil {
		t.Fatalf("Run returned %v after a clean drain", err)
	}
	if _, err := http.Post(ts.base+"/rpc", "application/json", strings.NewReader("{}")); err == nil {
		t.Error("still accepting after shutdown")
	}
}

// TestShutdownGraceExceeded: a call whose target ignores its context's end outlives the
// grace; Run says the drain did not finish, and the call fails (calls that stop when told
// are answered instead: TestShutdownAnswersCutOffCalls).
func TestShutdownGraceExceeded(t *testing.T) {
	deaf := deafTarget{began: make(chan struct{}), release: make(chan struct{})}
	ts := start(t, strings.Replace(baseConfig, "shutdown_grace: 5s", "shutdown_grace: 200ms", 1), map[string]gateway.Target{"stuck": deaf})
	t.Cleanup(func() { close(deaf.release) })
	done := make(chan error, 1)
	go func() { done <- callOnce(ts, `{"jsonrpc":"2.0","method":"stuck","id":1}`, `"ok"`) }()
	<-deaf.began
	began := time.Now()
	err := ts.stop()
	if err == nil || !strings.Contains(err.Error(), "shutdown did not finish") {
		t.Fatalf("Run returned %v, want a grace-exceeded error", err)
	}
	if took := time.Since(began); took > 3*time.Second {
		t.Fatalf("shutdown took %v with a 200ms grace", took)
	}
	if err := <-done; err == nil {
		t.Fatal("a call cut off by the grace period reported success")
	}
}

// TestShutdownClosesUnusedConnections: connections that never sent a request (clients and
// load balancers dial ahead) do not hold the drain: http.Server.Shutdown alone would wait up
// to 5 s for each to send one, past this 2 s grace.
func TestShutdownClosesUnusedConnections(t *testing.T) {
	ts := start(t, strings.Replace(baseConfig, "shutdown_grace: 5s", "shutdown_grace: 2s", 1), nil)
	var conns []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", strings.TrimPrefix(ts.base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		conns = append(conns, c)
	}
	if _, _, body := ts.post(`{"jsonrpc":"2.0","method":"subtract","params":[3,1],"id":1}`); !strings.Contains(body, `"result":2`) {
		t.Fatalf("call: %s", body) // the dialled connections have been accepted by now
	}
	began := time.Now()
	if err := ts.stop(); err != nil {
		t.Fatalf("shutdown with unused connections open: %v", err)
	}
	if took := time.Since(began); took > time.Second {
		t.Fatalf("shutdown took %v", took)
	}
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
			t.Fatalf("an unused connection is still open: %d, %v", n, err)
		}
	}
}
