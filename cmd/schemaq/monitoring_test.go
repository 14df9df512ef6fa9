package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// rulesFile and dashboardFile are what deploy/ ships for monitoring.
var (
	rulesFile     = filepath.Join("..", "..", "deploy", "prometheus", "schemaq-rules.yaml")
	rulesTestFile = filepath.Join("..", "..", "deploy", "prometheus", "schemaq-rules.test.yaml")
	dashboardFile = filepath.Join("..", "..", "deploy", "grafana", "schemaq-dashboard.json")
)

type ruleGroups struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Record      string            `yaml:"record"`
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// declaredMetrics reads the metric names the code registers, from its
// sources: a metric a rule or panel names and no code declares is a typo
// or a metric that was renamed, and would stay silent forever.
func declaredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	decl := regexp.MustCompile(`Name:\s*"(schemaq_[a-z0-9_]+)"`)
	names := map[string]bool{}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

var metricRef = regexp.MustCompile(`\bschemaq_[a-z0-9_]+`)

// checkExpr fails for every schemaq metric expr names that the code does
// not declare (histogram series by their base name).
func checkExpr(t *testing.T, where, expr string, declared map[string]bool) int {
	t.Helper()
	n := 0
	for _, ref := range metricRef.FindAllString(expr, -1) {
		base := ref
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(ref, suffix); ok && declared[b] {
				base = b
			}
		}
		if !declared[base] {
			t.Errorf("%s names %s, which no code declares", where, ref)
		}
		n++
	}
	return n
}

func TestAlertRulesNameRealMetrics(t *testing.T) {
	declared := declaredMetrics(t)
	if len(declared) < 20 {
		t.Fatalf("found only %d declared metrics: the scan is broken", len(declared))
	}
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rg ruleGroups
	if err := yaml.Unmarshal(b, &rg); err != nil {
		t.Fatal(err)
	}
	deploy, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	alerts, refs := 0, 0
	for _, g := range rg.Groups {
		for _, r := range g.Rules {
			refs += checkExpr(t, "rule "+r.Record+r.Alert, r.Expr, declared)
			if r.Alert == "" {
				continue
			}
			alerts++
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s: want a severity label and summary and description annotations", r.Alert)
			}
			if !strings.Contains(string(deploy), r.Alert) {
				t.Errorf("alert %s is not documented in docs/deploy.md", r.Alert)
			}
		}
	}
	if alerts < 5 || refs < 10 {
		t.Errorf("%d alerts naming %d metrics: the file did not decode as rules", alerts, refs)
	}
}

func TestDashboardNamesRealMetrics(t *testing.T) {
	declared := declaredMetrics(t)
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			ID      int    `json:"id"`
			Type    string `json:"type"`
			Title   string `json:"title"`
			GridPos struct {
				W, X int
			} `json:"gridPos"`
			Targets []struct {
				Expr       string `json:"expr"`
				Datasource struct {
					UID string `json:"uid"`
				} `json:"datasource"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	ids := map[int]bool{}
	refs := 0
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q is wider than the grid", p.Title)
		}
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q queries datasource %q, not the dashboard's variable", p.Title, tg.Datasource.UID)
			}
			refs += checkExpr(t, "panel "+p.Title, tg.Expr, declared)
		}
	}
	if dash.UID == "" || refs < 20 {
		t.Errorf("uid %q, %d metric references: the dashboard did not decode", dash.UID, refs)
	}
}

// TestPromtoolRules runs Prometheus's own checker and the rules' unit
// tests. CI installs promtool and sets SCHEMAQ_REQUIRE_PROMTOOL=1.
func TestPromtoolRules(t *testing.T) {
	promtool := os.Getenv("SCHEMAQ_PROMTOOL")
	if promtool == "" {
		promtool, _ = exec.LookPath("promtool")
	}
	if promtool == "" {
		if os.Getenv("SCHEMAQ_REQUIRE_PROMTOOL") != "" {
			t.Fatal("promtool not found (SCHEMAQ_REQUIRE_PROMTOOL is set)")
		}
		t.Skip("promtool not found: set SCHEMAQ_PROMTOOL or put it on PATH")
	}
	for _, args := range [][]string{{"check", "rules", filepath.Base(rulesFile)}, {"test", "rules", filepath.Base(rulesTestFile)}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = filepath.Dir(rulesFile)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
