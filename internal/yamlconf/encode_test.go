package yamlconf

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

type encInner struct {
	Wait  time.Duration `yaml:"wait"`
	Names []string      `yaml:"names"`
}

type encConfig struct {
	Name    string              `yaml:"name"`
	Count   int                 `yaml:"count"`
	On      bool                `yaml:"on"`
	Rate    float64             `yaml:"rate"`
	Inner   encInner            `yaml:"inner"`
	Opt     *encInner           `yaml:"opt"`
	List    []encInner          `yaml:"list"`
	Unset   []string            `yaml:"unset"`
	None    []string            `yaml:"none"`
	ByName  map[string]encInner `yaml:"by_name"`
	private int
}

// What Encode writes, Decode reads back as the same value: nil slices,
// maps and pointers stay nil (unset), empty ones stay empty.
func TestEncodeRoundTrip(t *testing.T) {
	in := encConfig{Name: "gw1", Count: 3, On: true, Rate: 0.5,
		Inner:  encInner{Wait: 90 * time.Second, Names: []string{"a", "b"}},
		Opt:    &encInner{Wait: time.Millisecond},
		List:   []encInner{{Names: []string{}}, {Wait: time.Hour}},
		None:   []string{},
		ByName: map[string]encInner{"z": {Wait: time.Minute}, "a": {}},
	}
	b, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"wait: 1m30s", "unset", "private"} {
		if strings.Contains(string(b), s) != (s == "wait: 1m30s") {
			t.Errorf("encoded file, looking for %q:\n%s", s, b)
		}
	}
	var out encConfig
	if _, err := Decode("enc.yaml", b, &out); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	in.private = 0
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n in %+v\nout %+v\n%s", in, out, b)
	}
	if out.Unset != nil || out.None == nil {
		t.Fatalf("nil and empty lists mixed up: unset %#v none %#v", out.Unset, out.None)
	}
}
