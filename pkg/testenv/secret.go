package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// SecretVolume lays files out as the kubelet mounts a Secret, and
// updates them the same way: each version in a new timestamped
// directory, ..data a symlink to the newest, and each file a symlink
// into ..data. Code that reads a mounted Secret (a tokens file) meets
// the same symlinks and the same swap as in a pod.
type SecretVolume struct {
	Dir      string
	versions int
}

// NewSecretVolume is an empty volume in a temporary directory.
func NewSecretVolume(t *testing.T) *SecretVolume {
	return &SecretVolume{Dir: t.TempDir()}
}

// Write makes files the volume's content, as one update, and returns
// the path of each by name.
func (v *SecretVolume) Write(t *testing.T, files map[string][]byte) map[string]string {
	t.Helper()
	v.versions++
	stamp := fmt.Sprintf("..2026_12_06_00_00_%02d.000000001", v.versions)
	if err := os.Mkdir(filepath.Join(v.Dir, stamp), 0o750); err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(v.Dir, stamp, name), data, 0o440); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(v.Dir, name)
		if _, err := os.Lstat(path); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", name), path); err != nil {
				t.Fatal(err)
			}
		}
		paths[name] = path
	}
	tmp := filepath.Join(v.Dir, "..data_tmp")
	if err := os.Symlink(stamp, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.Dir, "..data")); err != nil {
		t.Fatal(err)
	}
	return paths
}
