package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// schemaMarker starts the part of a key's comment block that is JSON Schema
// for it (YAML or JSON, the comment marks stripped), after its "# --" text:
//
//	# -- How long a request is held.
//	# @schema {type: string, pattern: '^[0-9]+s$'}
//	maxWait: 120s
//
// On a key whose map documents keys inside, the schema's keywords are added
// to what those keys make (an object of exactly them). On any other key it
// is the key's whole schema; a key with none gets its default's type. Two
// keywords are the generator's own: "required: true" puts the key in its
// parent's required list, and "definition: NAME" files the schema under
// definitions/NAME for other keys' "$ref: '#/definitions/NAME'".
const schemaMarker = "# @schema"

// Schema returns values.schema.json for a values.yaml, from the same
// comments as the README: one source for both (hack/chart/render.sh).
func Schema(values []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(values, &doc); err != nil {
		return nil, fmt.Errorf("parsing values: %w", err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("values.yaml is not a map")
	}
	g := &schemaGen{definitions: map[string]any{}}
	root, err := g.object(doc.Content[0], "")
	if err != nil {
		return nil, err
	}
	out := ordered{
		{"$schema", "http://json-schema.org/draft-07/schema#"},
		{"title", "Napwake chart values"},
	}
	out = append(out, root...)
	if len(g.definitions) > 0 {
		names := make([]string, 0, len(g.definitions))
		for n := range g.definitions {
			names = append(names, n)
		}
		sort.Strings(names)
		defs := ordered{}
		for _, n := range names {
			defs = append(defs, kv{n, g.definitions[n]})
		}
		out = append(out, kv{"definitions", defs})
	}
	for _, ref := range g.refs {
		if _, ok := g.definitions[ref.name]; !ok {
			return nil, fmt.Errorf("%s: $ref to definitions/%s, which no key's schema defines", ref.key, ref.name)
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

type schemaGen struct {
	definitions map[string]any
	refs        []struct{ key, name string }
}

// object is the schema of a map whose keys are documented: exactly its
// keys, each with its own schema, and those marked required.
func (g *schemaGen) object(m *yaml.Node, prefix string) (ordered, error) {
	props := ordered{}
	var required []any
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := prefix + k.Value
		s, req, err := g.property(k, v, key)
		if err != nil {
			return nil, err
		}
		props = append(props, kv{k.Value, s})
		if req {
			required = append(required, k.Value)
		}
	}
	o := ordered{{"type", "object"}, {"additionalProperties", false}, {"properties", props}}
	if len(required) > 0 {
		o = append(o, kv{"required", required})
	}
	return o, nil
}

// property is one key's schema, and whether its parent requires it.
func (g *schemaGen) property(k, v *yaml.Node, key string) (any, bool, error) {
	ann, err := annotation(k.HeadComment)
	if err != nil {
		return nil, false, fmt.Errorf("%s: its %s comment: %w", key, schemaMarker, err)
	}
	required := false
	if r, ok := ann.get("required"); ok {
		if b, isBool := r.(bool); isBool {
			required = b
			ann = ann.without("required")
		}
	}
	definition := ""
	if d, ok := ann.get("definition"); ok {
		name, isString := d.(string)
		if !isString || name == "" {
			return nil, false, fmt.Errorf("%s: definition must name the definition", key)
		}
		definition = name
		ann = ann.without("definition")
	}
	if r, ok := ann.get("$ref"); ok {
		name, _ := strings.CutPrefix(fmt.Sprint(r), "#/definitions/")
		g.refs = append(g.refs, struct{ key, name string }{key, name})
	}
	desc, documented := description(k.HeadComment)
	var s ordered
	switch {
	case v.Kind == yaml.MappingNode && hasDocumented(v):
		if s, err = g.object(v, key+"."); err != nil {
			return nil, false, err
		}
		for _, e := range ann {
			s = s.set(e.k, e.v)
		}
	case len(ann) > 0:
		s = ann
	default:
		s = inferred(v)
	}
	if _, has := s.get("description"); documented && !has && len(ann.refOnly()) == 0 {
		s = append(s, kv{"description", desc})
	}
	if definition != "" {
		if _, dup := g.definitions[definition]; dup {
			return nil, false, fmt.Errorf("%s: definitions/%s is defined twice", key, definition)
		}
		g.definitions[definition] = s
		g.refs = append(g.refs, struct{ key, name string }{key, definition})
		return ordered{{"$ref", "#/definitions/" + definition}}, required, nil
	}
	return s, required, nil
}

// inferred is the schema a default implies when no comment says more.
func inferred(v *yaml.Node) ordered {
	switch v.Kind {
	case yaml.SequenceNode:
		return ordered{{"type", "array"}}
	case yaml.MappingNode:
		return ordered{{"type", "object"}}
	}
	switch v.Tag {
	case "!!int":
		return ordered{{"type", "integer"}}
	case "!!bool":
		return ordered{{"type", "boolean"}}
	case "!!float":
		return ordered{{"type", "number"}}
	case "!!null":
		return ordered{}
	}
	return ordered{{"type", "string"}}
}

// annotation reads the schema after the marker in a key's last comment
// block; none is an empty schema.
func annotation(head string) (ordered, error) {
	blocks := strings.Split(head, "\n\n")
	block := blocks[len(blocks)-1]
	at := strings.Index(block, schemaMarker)
	if at < 0 {
		return nil, nil
	}
	var lines []string
	for i, line := range strings.Split(block[at+len(schemaMarker):], "\n") {
		line = strings.TrimSpace(line)
		if i > 0 {
			line = strings.TrimPrefix(line, "#")
		}
		lines = append(lines, line)
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(strings.Join(lines, "\n")), &n); err != nil {
		return nil, err
	}
	if len(n.Content) != 1 || n.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("want a map of JSON Schema keywords")
	}
	v, err := decode(n.Content[0])
	if err != nil {
		return nil, err
	}
	return v.(ordered), nil
}

// decode turns YAML into JSON values, keeping the order of map keys.
func decode(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.MappingNode:
		o := ordered{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := decode(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			o = append(o, kv{n.Content[i].Value, v})
		}
		return o, nil
	case yaml.SequenceNode:
		l := []any{}
		for _, c := range n.Content {
			v, err := decode(c)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml.AliasNode:
		return decode(n.Alias)
	}
	var x any
	if err := n.Decode(&x); err != nil {
		return nil, err
	}
	return x, nil
}

// ordered is a JSON object that keeps its keys' order.
type ordered []kv

type kv struct {
	k string
	v any
}

func (o ordered) get(k string) (any, bool) {
	for _, e := range o {
		if e.k == k {
			return e.v, true
		}
	}
	return nil, false
}

func (o ordered) set(k string, v any) ordered {
	for i, e := range o {
		if e.k == k {
			o[i].v = v
			return o
		}
	}
	return append(o, kv{k, v})
}

func (o ordered) without(k string) ordered {
	out := ordered{}
	for _, e := range o {
		if e.k != k {
			out = append(out, e)
		}
	}
	return out
}

// refOnly is o when it is a bare $ref, whose siblings draft-07 ignores.
func (o ordered) refOnly() ordered {
	if len(o) == 1 && o[0].k == "$ref" {
		return o
	}
	return nil
}

func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(e.k)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		var vb bytes.Buffer
		enc := json.NewEncoder(&vb)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(e.v); err != nil {
			return nil, err
		}
		b.Write(bytes.TrimRight(vb.Bytes(), "\n"))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
