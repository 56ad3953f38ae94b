package envoyrls

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A symbolic link is read as the regular file it leads to (how a
// Kubernetes ConfigMap volume presents its files); one to a directory,
// or to nothing, is passed over.
func TestReadDirFollowsLinksToFiles(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(elsewhere, "target.yaml"), "domain: linked\n")
	for name, target := range map[string]string{
		"linked.yaml": filepath.Join(elsewhere, "target.yaml"),
		"dir.yaml":    elsewhere,
		"gone.yaml":   filepath.Join(elsewhere, "missing.yaml"),
	} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "plain.yaml"), "domain: plain\n")
	srcs, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range srcs {
		got = append(got, filepath.Base(s.Name)+"="+strings.TrimSpace(string(s.Data)))
	}
	if want := "linked.yaml=domain: linked,plain.yaml=domain: plain"; strings.Join(got, ",") != want {
		t.Fatalf("read %v, want %s", got, want)
	}
	// statDir errs on a link to nothing (the watcher then reads the
	// whole directory each look): the link goes before it is watched.
	os.Remove(filepath.Join(dir, "gone.yaml"))
	before, err := statDir(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(elsewhere, "target.yaml"), "domain: linked2\n")
	if after, err := statDir(dir, Options{}); err != nil || after == before {
		t.Fatalf("a change behind the link not seen (err %v)", err)
	}
}
