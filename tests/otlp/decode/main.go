// otlp-decode reads ExportProfilesServiceRequest bodies (raw or gzip) with
// the Go module go.opentelemetry.io/proto/otlp of opentelemetry-proto
// v1.10.0, keeping unknown fields (DiscardUnknown=false), and fails on any
// unknown field or dictionary index out of range. For each file it prints
// one line:
//
//	FILE type/unit=TOTAL ... samples=N links=L attrs=key,key,...
//
// A profile in OpenTelemetry's CPU convention (samples/count over a
// cpu/nanoseconds period) is totalled as cpu/nanoseconds, count x period,
// as Pyroscope stores it.
// so a test can compare what arrived with what was sent.
package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

func unknownFields(m protoreflect.Message, path string, out *[]string) {
	if len(m.GetUnknown()) > 0 {
		*out = append(*out, fmt.Sprintf("%s (%s): %d bytes", path, m.Descriptor().FullName(), len(m.GetUnknown())))
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := path + "." + string(fd.Name())
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				unknownFields(v.List().Get(i).Message(), fmt.Sprintf("%s[%d]", name, i), out)
			}
		case fd.IsMap():
		case fd.Message() != nil:
			unknownFields(v.Message(), name, out)
		}
		return true
	})
}

func read(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		r, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(r)
	}
	return data, nil
}

func check(path string) (string, error) {
	data, err := read(path)
	if err != nil {
		return "", err
	}
	req := &collectorpb.ExportProfilesServiceRequest{}
	if err := (proto.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(data, req); err != nil {
		return "", fmt.Errorf("decode: %v", err)
	}
	var unknown []string
	unknownFields(req.ProtoReflect(), "request", &unknown)
	if len(unknown) > 0 {
		return "", fmt.Errorf("unknown fields: %s", strings.Join(unknown, "; "))
	}
	d := req.GetDictionary()
	if d == nil || len(d.StringTable) == 0 || d.StringTable[0] != "" {
		return "", fmt.Errorf("dictionary missing or string_table[0] not empty")
	}
	str := func(i int32) (string, error) {
		if i < 0 || int(i) >= len(d.StringTable) {
			return "", fmt.Errorf("string index %d out of range", i)
		}
		return d.StringTable[i], nil
	}
	for _, l := range d.LocationTable {
		if l.MappingIndex < 0 || int(l.MappingIndex) >= len(d.MappingTable) {
			return "", fmt.Errorf("mapping index %d out of range", l.MappingIndex)
		}
		for _, line := range l.Lines {
			if line.FunctionIndex < 0 || int(line.FunctionIndex) >= len(d.FunctionTable) {
				return "", fmt.Errorf("function index %d out of range", line.FunctionIndex)
			}
		}
	}
	for _, s := range d.StackTable {
		for _, li := range s.LocationIndices {
			if li < 0 || int(li) >= len(d.LocationTable) {
				return "", fmt.Errorf("location index %d out of range", li)
			}
		}
	}
	totals := map[string]int64{}
	attrs := map[string]bool{}
	samples, links := 0, 0
	for _, rp := range req.ResourceProfiles {
		for _, sp := range rp.ScopeProfiles {
			for _, p := range sp.Profiles {
				t, err := str(p.GetSampleType().GetTypeStrindex())
				if err != nil {
					return "", err
				}
				u, err := str(p.GetSampleType().GetUnitStrindex())
				if err != nil {
					return "", err
				}
				pt, err := str(p.GetPeriodType().GetTypeStrindex())
				if err != nil {
					return "", err
				}
				pu, err := str(p.GetPeriodType().GetUnitStrindex())
				if err != nil {
					return "", err
				}
				scale := int64(1)
				if t == "samples" && u == "count" && pt == "cpu" && pu == "nanoseconds" && p.Period > 0 {
					t, u, scale = "cpu", "nanoseconds", p.Period
				}
				for _, s := range p.Samples {
					if s.StackIndex < 0 || int(s.StackIndex) >= len(d.StackTable) {
						return "", fmt.Errorf("stack index %d out of range", s.StackIndex)
					}
					if s.LinkIndex < 0 || int(s.LinkIndex) >= len(d.LinkTable) {
						return "", fmt.Errorf("link index %d out of range", s.LinkIndex)
					}
					if s.LinkIndex != 0 {
						links++
					}
					for _, ai := range s.AttributeIndices {
						if ai < 0 || int(ai) >= len(d.AttributeTable) {
							return "", fmt.Errorf("attribute index %d out of range", ai)
						}
						k, err := str(d.AttributeTable[ai].KeyStrindex)
						if err != nil {
							return "", err
						}
						attrs[k] = true
					}
					for _, v := range s.Values {
						totals[t+"/"+u] += v * scale
					}
					samples++
				}
			}
		}
	}
	var parts []string
	for k, v := range totals {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(parts)
	var keys []string
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return fmt.Sprintf("%s samples=%d links=%d attrs=%s", strings.Join(parts, " "), samples, links, strings.Join(keys, ",")), nil
}

func main() {
	failed := false
	for _, path := range os.Args[1:] {
		line, err := check(path)
		if err != nil {
			fmt.Printf("%s ERROR %v\n", path, err)
			failed = true
			continue
		}
		fmt.Printf("%s %s\n", path, line)
	}
	if failed || len(os.Args) < 2 {
		os.Exit(1)
	}
}
