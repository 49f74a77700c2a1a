package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// VerifyURL runs the whole suite against url and compares the results with the expected
// failures in expectedFile: a failure not listed, or a listed scenario that passes, fails
// the test. The tools are the installation in toolsDir; when they are missing the test
// skips, unless the environment variable CONFORMANCE_REQUIRED is set. It is the one place
// the repository's conformance tests run the suite.
func VerifyURL(t *testing.T, toolsDir, url, expectedFile string) {
	t.Helper()
	verify(t, toolsDir, url, expectedFile, "")
}

// VerifyURLAt is VerifyURL for the scenarios of one protocol version (the suite's
// --spec-version); the report's last lines give the pass count for that version.
func VerifyURLAt(t *testing.T, toolsDir, url, expectedFile, specVersion string) {
	t.Helper()
	verify(t, toolsDir, url, expectedFile, specVersion)
}

func verify(t *testing.T, toolsDir, url, expectedFile, specVersion string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tools := Tools{Dir: toolsDir}
	if err := tools.Check(ctx); errors.Is(err, ErrNotInstalled) && os.Getenv("CONFORMANCE_REQUIRED") == "" {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	var known []string
	var err error
	if specVersion != "" {
		known, err = tools.ScenariosFor(ctx, specVersion)
	} else {
		known, err = tools.Scenarios(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(expectedFile)
	if err != nil {
		t.Fatal(err)
	}
	expected, err := ParseExpected(f)
	_ = f.Close()
	if err != nil {
		t.Fatalf("%s: %v", expectedFile, err)
	}
	var log bytes.Buffer
	results, err := tools.Run(ctx, RunOptions{URL: url, SpecVersion: specVersion, OutDir: filepath.Join(t.TempDir(), "results"), Log: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	v := Compare(results, expected, known)
	var report bytes.Buffer
	if err := WriteReport(&report, results, expected, v); err != nil {
		t.Fatal(err)
	}
	if specVersion != "" {
		fmt.Fprintf(&report, "protocol %s: %d of %d scenarios passed (suite %s)\n", specVersion, len(v.Passed), len(results), SuiteVersion)
	}
	t.Log("\n" + report.String())
	if !v.OK() {
		t.Errorf("%s does not conform as %s says\n%s", url, filepath.Base(expectedFile), log.String())
	}
}
