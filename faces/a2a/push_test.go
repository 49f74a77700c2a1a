package a2aface

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestPushGuardURL(t *testing.T) {
	strict, err := newGuard(&PushConfig{})
	if err != nil {
		t.Fatal(err)
	}
	lax, _ := newGuard(&PushConfig{AllowHTTP: true})
	hosts, _ := newGuard(&PushConfig{AllowedHosts: []string{"hooks.example.com", "*.partner.example"}})
	cidrs, _ := newGuard(&PushConfig{AllowHTTP: true, AllowedCIDRs: []string{"127.0.0.0/8", "10.1.0.0/16"}})
	tests := []struct {
		name string
		g    *guard
		url  string
		ok   bool
	}{
		{"https public name", strict, "https://hooks.example.com/a2a", true},
		{"https public IP", strict, "https://8.8.8.8/hook", true},
		{"http refused", strict, "http://hooks.example.com/a2a", false},
		{"http allowed", lax, "http://hooks.example.com/a2a", true},
		{"other scheme", lax, "ftp://hooks.example.com/", false},
		{"relative", lax, "/hook", false},
		{"user info", strict, "https://u:p@hooks.example.com/", false},
		{"loopback v4", lax, "http://127.0.0.1:8080/", false},
		{"loopback v4 other", lax, "http://127.1.2.3/", false},
		{"loopback v6", lax, "http://[::1]/", false},
		{"IPv4-mapped loopback", lax, "http://[::ffff:127.0.0.1]/", false},
		{"IPv4-mapped public", lax, "http://[::ffff:8.8.8.8]/", false},
		{"IPv4-mapped hex form", lax, "http://[::ffff:7f00:1]/", false},
		{"decimal IP", lax, "http://2130706433/", false},
		{"hex IP", lax, "http://0x7f000001/", false},
		{"octal IP", lax, "http://0177.0.0.1/", false},
		{"short IP", lax, "http://127.1/", false},
		{"private 10", lax, "http://10.0.0.1/", false},
		{"private 172", lax, "http://172.16.5.4/", false},
		{"private 192", lax, "http://192.168.1.1/", false},
		{"unique local v6", lax, "http://[fd00::1]/", false},
		{"link-local v4 (metadata)", lax, "http://169.254.169.254/latest/meta-data", false},
		{"link-local v6", lax, "http://[fe80::1]/", false},
		{"zoned", lax, "http://[fe80::1%25eth0]/", false},
		{"multicast", lax, "http://224.0.0.1/", false},
		{"multicast v6", lax, "http://[ff02::1]/", false},
		{"unspecified", lax, "http://0.0.0.0/", false},
		{"unspecified v6", lax, "http://[::]/", false},
		{"CGNAT", lax, "http://100.64.0.1/", false},
		{"broadcast", lax, "http://255.255.255.255/", false},
		{"NAT64 of loopback", lax, "http://[64:ff9b::7f00:1]/", false},
		{"6to4 of loopback", lax, "http://[2002:7f00:1::]/", false},
		{"allowed host", hosts, "https://hooks.example.com/x", true},
		{"allowed wildcard", hosts, "https://a.b.partner.example/x", true},
		{"wildcard is not the apex", hosts, "https://partner.example/x", false},
		{"host not allowed", hosts, "https://evil.example/x", false},
		{"suffix trick", hosts, "https://hooks.example.com.evil.example/x", false},
		{"cidr allows loopback", cidrs, "http://127.0.0.1:9/", true},
		{"cidr allows mapped loopback", cidrs, "http://[::ffff:127.0.0.1]/", true},
		{"cidr allows private", cidrs, "http://10.1.2.3/", true},
		{"cidr not covering", cidrs, "http://10.2.0.1/", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.g.checkURL(tt.url)
			if (err == nil) != tt.ok {
				t.Errorf("checkURL(%q) = %v, want ok %v", tt.url, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrPushURL) {
				t.Errorf("error %v does not wrap ErrPushURL", err)
			}
		})
	}
	if _, err := newGuard(&PushConfig{AllowedHosts: []string{"a/b"}}); err == nil {
		t.Error("a host with a path was accepted")
	}
	if _, err := newGuard(&PushConfig{AllowedCIDRs: []string{"10.0.0.0/33"}}); err == nil {
		t.Error("a bad CIDR was accepted")
	}
}

func TestPushGuardAddress(t *testing.T) {
	g, _ := newGuard(&PushConfig{})
	for addr, ok := range map[string]bool{
		"93.184.215.14": true, "2606:2800:21f:cb07:6820:80da:af6b:8b2c": true,
		"127.0.0.1": false, "::1": false, "::ffff:127.0.0.1": false, "::ffff:93.184.215.14": false,
		"10.0.0.1": false, "169.254.1.1": false, "fe80::1": false, "0.0.0.0": false, "::": false,
		"224.1.1.1": false, "ff05::2": false, "fc00::1": false, "198.18.0.1": false,
	} {
		err := g.checkIP(netip.MustParseAddr(addr))
		if (err == nil) != ok {
			t.Errorf("checkIP(%s) = %v, want ok %v", addr, err, ok)
		}
	}
}

// TestPushDialRefusesResolved: a name that passes the URL check but resolves to a refused
// address is refused when the connection is dialled — the receiver hears nothing.
func TestPushDialRefusesResolved(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	p := newPusher(&Face{log: slog.New(slog.DiscardHandler)})
	defer p.close()
	do := func(g *guard, url string) error {
		if _, err := g.checkURL(url); err != nil {
			t.Fatalf("checkURL(%s): %v", url, err)
		}
		ctx := context.WithValue(context.Background(), guardKey{}, g)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("{}"))
		resp, err := p.client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
		return err
	}
	refusing, _ := newGuard(&PushConfig{AllowHTTP: true})
	if err := do(refusing, "http://localhost:"+port+"/hook"); !errors.Is(err, ErrPushURL) {
		t.Errorf("localhost (resolving to loopback) = %v, want ErrPushURL", err)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the receiver was reached %d times", n)
	}
	allowing, _ := newGuard(&PushConfig{AllowHTTP: true, AllowedCIDRs: []string{"127.0.0.0/8", "::1/128"}})
	if err := do(allowing, "http://localhost:"+port+"/hook"); err != nil {
		t.Errorf("localhost with 127.0.0.0/8 allowed: %v", err)
	}
	if hits.Load() != 1 {
		t.Errorf("hits = %d, want 1", hits.Load())
	}
}

// TestPushRedirectNotFollowed: a 3xx is the receiver's answer, not a new destination.
func TestPushRedirectNotFollowed(t *testing.T) {
	var followed atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed.Add(1) }))
	defer target.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	p := newPusher(&Face{log: slog.New(slog.DiscardHandler)})
	defer p.close()
	g, _ := newGuard(&PushConfig{AllowHTTP: true, AllowedCIDRs: []string{"127.0.0.0/8"}})
	ctx := context.WithValue(context.Background(), guardKey{}, g)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("{}"))
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || followed.Load() != 0 {
		t.Errorf("status %d, followed %d: the redirect was followed", resp.StatusCode, followed.Load())
	}
}

// TestPushQueueFull: past a2a.push.max_queue a delivery is dropped and counted, at once.
func TestPushQueueFull(t *testing.T) {
	var dropped atomic.Int32
	f := &Face{log: slog.New(slog.DiscardHandler), pushOutcome: func(o string) {
		if o == PushDropped {
			dropped.Add(1)
		}
	}}
	p := newPusher(f)
	c := PushConfig{MaxQueue: 2, Workers: 0}.WithDefaults()
	c.Workers = 0 // none: nothing leaves the queue
	p.once.Do(func() { p.queue = make(chan *delivery, c.MaxQueue) })
	for range 5 {
		p.enqueue(&delivery{taskID: "t", limits: c}, false)
	}
	if dropped.Load() != 3 || p.pending.Load() != 2 {
		t.Errorf("dropped %d, pending %d; want 3 and 2", dropped.Load(), p.pending.Load())
	}
	p.close()
}

func TestRetryWait(t *testing.T) {
	const ms = time.Millisecond
	for _, tt := range []struct {
		backoff, ceiling time.Duration
		n                int
		want             time.Duration
	}{
		{500 * ms, 30 * time.Second, 1, 500 * ms},
		{500 * ms, 30 * time.Second, 2, time.Second},
		{500 * ms, 30 * time.Second, 4, 4 * time.Second},
		{500 * ms, 30 * time.Second, 100, 30 * time.Second},
		{time.Duration(1 << 62), time.Duration(1<<63 - 1), 10, time.Duration(1<<63 - 1)},
		{10 * ms, 5 * ms, 3, 5 * ms},
	} {
		if got := retryWait(tt.backoff, tt.ceiling, tt.n); got != tt.want {
			t.Errorf("retryWait(%s, %s, %d) = %s, want %s", tt.backoff, tt.ceiling, tt.n, got, tt.want)
		}
	}
}
