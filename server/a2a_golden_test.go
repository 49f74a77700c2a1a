package server

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

// a2aGoldenDir holds the golden A2A exchanges; TestGolden's JSON-RPC replay leaves it out.
const a2aGoldenDir = "testdata/a2a"

var a2aNormalize = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`a2a-[A-Za-z0-9_-]{22}`), "a2a-ID"},
	{regexp.MustCompile(`ctx-[A-Za-z0-9_-]{22}`), "ctx-ID"},
	{regexp.MustCompile(`msg-[A-Za-z0-9_-]{22}`), "msg-ID"},
	{regexp.MustCompile(`"trace_id":"[0-9a-f]{32}"`), `"trace_id":"TRACE"`},
	{regexp.MustCompile(`"timestamp":"[^"]+"`), `"timestamp":"TIME"`},
}

// TestA2AGolden replays testdata/a2a/*.txtar against the A2A face as alice: each
// "<n>.request" section (a first line "A2A-Version: <v>" sets the header; $TASK is the id
// of the last task a response named) is sent in order, and its response — the events of a
// stream, one per line — must equal "<n>.golden", with ids, trace ids and timestamps
// normalized (rewritten by -update).
func TestA2AGolden(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(a2aGoldenDir, "*.txtar"))
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	taskRE := regexp.MustCompile(`"(?:id|taskId)":"(a2a-[A-Za-z0-9_-]{22})"`)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			ts := startA2A(t, "")
			ts.a2aPlainOK = true // a refused stream is a plain response
			alice := callerToken(t, "alice", "agents", "caps")
			sections := map[string]string{}
			for _, f := range ar.Files {
				sections[f.Name] = string(f.Data)
			}
			task := ""
			var out []txtar.File
			for _, f := range ar.Files {
				key, ok := strings.CutSuffix(f.Name, ".request")
				if !ok {
					continue
				}
				version, body := "", strings.TrimSpace(string(f.Data))
				if first, rest, found := strings.Cut(body, "\n"); found && strings.HasPrefix(first, "A2A-Version:") {
					version, body = strings.TrimSpace(strings.TrimPrefix(first, "A2A-Version:")), rest
				}
				body = strings.ReplaceAll(body, "$TASK", task)
				var got string
				if strings.Contains(body, `"SendStreamingMessage"`) || strings.Contains(body, `"SubscribeToTask"`) || strings.Contains(body, `"message/stream"`) {
					got = strings.Join(ts.a2aEvents(alice, version, body), "\n")
				} else {
					_, _, got = ts.a2aPost(alice, version, body)
				}
				if m := taskRE.FindStringSubmatch(got); m != nil {
					task = m[1]
				}
				for _, n := range a2aNormalize {
					got = n.re.ReplaceAllString(got, n.with)
				}
				got += "\n"
				out = append(out, f, txtar.File{Name: key + ".golden", Data: []byte(got)})
				if want := sections[key+".golden"]; !*update && got != want {
					t.Errorf("%s:\ngot  %s\nwant %s", key, got, want)
				}
			}
			if *update {
				ar.Files = out
				if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
