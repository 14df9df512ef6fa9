package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's layout table lists every Go package of the repository.
func TestReadmeListsEveryPackage(t *testing.T) {
	root := filepath.Join("..", "..")
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, layout, ok := strings.Cut(string(readme), "## Layout")
	if !ok {
		t.Fatal("README.md has no Layout section")
	}
	layout, _, _ = strings.Cut(layout, "\n## ")
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		if !strings.Contains(layout, "`"+filepath.ToSlash(dir)+"`") {
			t.Errorf("README.md's layout does not list %s", dir)
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The files a platform team looks for beside the code.
func TestPackagingFiles(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, tc := range []struct{ file, want string }{
		{"LICENSE", "Apache License"},
		{"CHANGELOG.md", "## [Unreleased]"},
		// The image's build context is the repository root: its history,
		// local data and binaries stay out of it.
		{"deploy/Dockerfile.dockerignore", "\n.git\n"},
		{"deploy/Dockerfile.dockerignore", "\n.schemaq\n"},
		{"deploy/Dockerfile.dockerignore", "\nschemaq\n"},
	} {
		b, err := os.ReadFile(filepath.Join(root, tc.file))
		if err != nil || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s should hold %q (%v)", tc.file, tc.want, err)
		}
	}
}
