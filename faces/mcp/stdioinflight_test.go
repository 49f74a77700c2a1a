package mcpface

import (
	"context"
	"io"
	"testing"
	"time"
)

// TestStdioRoutedLinesBounded: with mcp_face.stdio_max_in_flight 2, two routed lines are
// served at once and the third waits — the reading of stdin with it — until one ends.
func TestStdioRoutedLinesBounded(t *testing.T) {
	in, w := io.Pipe()
	p := newStdioPipe(context.Background(), in, io.Discard, time.Second, 1<<20)
	p.route = func([]byte) bool { return true }
	p.slots = make(chan struct{}, 2)
	started, release := make(chan string, 3), make(chan struct{})
	p.serve = func(line []byte) { started <- string(line); <-release }
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := p.Read(buf); err != nil {
				return
			}
		}
	}()
	go func() {
		for _, l := range []string{`{"id":1,"method":"a"}`, `{"id":2,"method":"b"}`, `{"id":3,"method":"c"}`} {
			_, _ = w.Write([]byte(l + "\n"))
		}
	}()
	for range 2 {
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			t.Fatal("the first two lines were not served")
		}
	}
	select {
	case l := <-started:
		t.Fatalf("%s was served beside two others: the bound is 2", l)
	case <-time.After(200 * time.Millisecond):
	}
	release <- struct{}{}
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the third line was not served once a slot was free")
	}
	close(release)
	_ = w.Close()
	p.running.Wait()
}
