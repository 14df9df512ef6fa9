package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nuid"
	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
)

// aclRules are the rules of the user schemaq in the users.acl of the
// build's Secret schemaq-redis, without its password; "" when the build
// has none (it brings no Redis of its own).
func aclRules(t *testing.T, objs []kruntime.Object) string {
	t.Helper()
	for _, o := range objs {
		if s, ok := o.(*corev1.Secret); ok && strings.HasPrefix(s.Name, "schemaq-redis") {
			_, rules, _ := parseACL(t, string(s.Data["users.acl"]))
			return rules
		}
	}
	return ""
}

// parseACL reads the users.acl schemaq ships: the default user must be
// off, and schemaq's line gives its password as a hash. It returns that
// hash and the rest of the rules.
func parseACL(t *testing.T, file string) (hash, rules string, defaultOff bool) {
	t.Helper()
	for _, line := range strings.Split(file, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(f[0], "#"):
		case len(f) == 3 && f[0] == "user" && f[1] == "default" && f[2] == "off":
			defaultOff = true
		case len(f) > 3 && f[0] == "user" && f[1] == "schemaq" && f[2] == "on" && strings.HasPrefix(f[3], "#"):
			hash, rules = f[3][1:], strings.Join(f[4:], " ")
		default:
			t.Errorf("users.acl: unexpected line %q", line)
		}
	}
	return hash, rules, defaultOff
}

// TestKubernetesRedisUser: the development Redis has no default user,
// and schemaq's user holds the hash of the password the pods present,
// may touch only keys and channels under the prefix schemaq uses, and
// runs only commands named one by one.
func TestKubernetesRedisUser(t *testing.T) {
	objs := decodeManifests(t, "shared-dev", kustomizeBuild(t, filepath.Join(k8sDir, "overlays", "shared-dev")))
	var secret *corev1.Secret
	var redisDep *appsv1.Deployment
	var cm *corev1.ConfigMap
	for _, o := range objs {
		switch v := o.(type) {
		case *corev1.Secret:
			if strings.HasPrefix(v.Name, "schemaq-redis") {
				secret = v
			}
		case *appsv1.Deployment:
			if v.Name == "redis" {
				redisDep = v
			}
		case *corev1.ConfigMap:
			if strings.HasPrefix(v.Name, "schemaq-shared") {
				cm = v
			}
		}
	}
	if secret == nil || redisDep == nil || cm == nil {
		t.Fatalf("shared-dev: want the Secret schemaq-redis, the Deployment redis and the ConfigMap schemaq-shared")
	}
	hash, rules, defaultOff := parseACL(t, string(secret.Data["users.acl"]))
	if !defaultOff {
		t.Error("users.acl: the default user must be off")
	}
	sum := sha256.Sum256(secret.Data["password"])
	if hash != hex.EncodeToString(sum[:]) {
		t.Errorf("users.acl: schemaq's hash %q is not the SHA-256 of the Secret's password", hash)
	}
	fields := strings.Fields(rules)
	for _, want := range []string{"resetkeys", "~schemaq:*", "resetchannels", "&schemaq:*", "-@all", "+ft.search", "+evalsha"} {
		if !slices.Contains(fields, want) {
			t.Errorf("users.acl: schemaq's rules lack %s: %s", want, rules)
		}
	}
	for _, f := range fields {
		if strings.HasPrefix(f, "+@") || f == "allcommands" || f == "allkeys" || f == "~*" || f == "&*" || f == "allchannels" || f == "nopass" ||
			(strings.HasPrefix(f, "+") && slices.Contains([]string{"+flushdb", "+flushall", "+keys", "+config", "+ft._list", "+debug", "+shutdown", "+acl"}, f)) {
			t.Errorf("users.acl: schemaq's rules grant %s", f)
		}
	}
	if u, err := url.Parse(cm.Data["SCHEMAQ_REDIS_URL"]); err != nil || u.User.Username() != "schemaq" {
		t.Errorf("SCHEMAQ_REDIS_URL %q does not sign in as schemaq", cm.Data["SCHEMAQ_REDIS_URL"])
	}
	if p := cm.Data["SCHEMAQ_REDIS_PREFIX"]; p != "" && p != "schemaq:" {
		t.Errorf("SCHEMAQ_REDIS_PREFIX %q is not the prefix users.acl grants", p)
	}

	c := redisDep.Spec.Template.Spec.Containers[0]
	i := slices.Index(c.Args, "--aclfile")
	if i < 0 || i+1 == len(c.Args) {
		t.Fatalf("redis: no --aclfile in %v", c.Args)
	}
	dir, file := filepath.Split(c.Args[i+1])
	var mounted bool
	for _, m := range c.VolumeMounts {
		for _, v := range redisDep.Spec.Template.Spec.Volumes {
			if v.Name != m.Name || v.Secret == nil || !strings.HasPrefix(v.Secret.SecretName, "schemaq-redis") || filepath.Clean(m.MountPath) != filepath.Clean(dir) {
				continue
			}
			for _, it := range v.Secret.Items {
				mounted = mounted || (it.Key == "users.acl" && it.Path == file)
			}
		}
	}
	if !mounted {
		t.Errorf("redis: %s is not the Secret's users.acl", c.Args[i+1])
	}
	probe := c.ReadinessProbe
	if probe == nil || probe.Exec == nil || !slices.Contains(probe.Exec.Command, "--user") {
		t.Errorf("redis: the readiness probe must sign in (the default user is off): %+v", probe)
	}
	var auth bool
	for _, e := range c.Env {
		auth = auth || (e.Name == "REDISCLI_AUTH" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil &&
			strings.HasPrefix(e.ValueFrom.SecretKeyRef.Name, "schemaq-redis") && e.ValueFrom.SecretKeyRef.Key == "password")
	}
	if !auth {
		t.Error("redis: the probe's password (REDISCLI_AUTH) must come from the Secret schemaq-redis")
	}
}

// createRedisUser creates, on each live server at adminURLs (a
// cluster's nodes each keep their own users), one user with rules
// (schemaq's prefix replaced by prefix) and a password of its own,
// removed when the test ends. It returns a URL signing in as that user at
// the first server, and the user's name.
func createRedisUser(t *testing.T, rules, prefix string, adminURLs ...string) (string, string) {
	t.Helper()
	user, password := "k8stest-"+nuid.Next(), nuid.Next()
	for _, adminURL := range adminURLs {
		setRedisUser(t, adminURL, user, password, rules, prefix)
	}
	u, err := url.Parse(adminURLs[0])
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(user, password)
	return u.String(), user
}

func setRedisUser(t *testing.T, adminURL, user, password, rules, prefix string) {
	t.Helper()
	opt, err := redis.ParseURL(adminURL)
	if err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(opt)
	t.Cleanup(func() { admin.Close() })
	fields := strings.Fields(strings.ReplaceAll(rules, "schemaq:", prefix))
	for {
		args := []any{"ACL", "SETUSER", user, "reset", "on", ">" + password}
		for _, r := range fields {
			args = append(args, r)
		}
		err := admin.Do(context.Background(), args...).Err()
		if err == nil {
			break
		}
		// A server older than the file (Redis 7.0 has no CLIENT SETINFO,
		// which go-redis sends only where it exists) refuses the rule:
		// grant the rest.
		unknown := regexp.MustCompile(`modifier '([^']+)': Unknown command`).FindStringSubmatch(err.Error())
		if unknown == nil || !slices.ContainsFunc(fields, func(f string) bool { return strings.EqualFold(f, unknown[1]) }) {
			t.Fatalf("ACL SETUSER with users.acl's rules: %v", err)
		}
		t.Logf("this Redis has no %s; granting the rest", unknown[1])
		fields = slices.DeleteFunc(fields, func(f string) bool { return strings.EqualFold(f, unknown[1]) })
	}
	t.Cleanup(func() { admin.Do(context.Background(), "ACL", "DELUSER", user) })
}

// withoutSearchCommands drops the query engine's commands from ACL rules.
func withoutSearchCommands(rules string) string {
	var out []string
	for _, r := range strings.Fields(rules) {
		if !strings.HasPrefix(strings.ToLower(r), "+ft.") {
			out = append(out, r)
		}
	}
	return strings.Join(out, " ")
}

// noDenials fails the test if the server at adminURL logged a denial for
// user: a command the roles run that users.acl does not grant (even one
// they recover from).
func noDenials(t *testing.T, adminURL, user string) {
	t.Helper()
	opt, err := redis.ParseURL(adminURL)
	if err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(opt)
	defer admin.Close()
	entries, err := admin.ACLLog(context.Background(), 1000).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Username == user {
			t.Errorf("Redis denied %s %s (%s): grant it in users.acl", user, e.Object, e.Reason)
		}
	}
}
