"""OTLP profiles into pprof, as Grafana Pyroscope v2's OTLP ingestion
converts them (pkg/ingester/otlp: ingest_handler.go export, convert.go
ConvertOtelToGoogle), for the receiver's /v1development/profiles.

Each OTLP Profile becomes one pprof profile of one sample type, with the
series labels Pyroscope gives it: __delta__="false", __otel__="true",
__name__ from the profile type (samples/count over a cpu/nanoseconds
period: "process_cpu", values times the period; otherwise the period
type's name, "" when period is 0), the resource's and the scope's
attributes under their own keys (the first of a key wins),
and service_name from the samples' service.name attribute, else the
resource's (else "unknown_service", or
"unknown_service:<process.executable.name>"); samples of different
services become separate profiles. Attribute values count when they are
strings or ints (in decimal); keys and values given as dictionary
references (key_strindex, string_value_strindex) in the resource are not
resolved, as v2.2.1 does not resolve them. Sample attributes become pprof
labels (service.name excepted), a sample's link the span_id (and, for
16-byte trace ids, trace_id) labels in hex.
"""


class ConversionError(Exception):
    pass


def _at(table, i, what):
    if i < 0 or i >= len(table):
        raise ConversionError("%s index %d out of bounds" % (what, i))
    return table[i]


def _single(v):
    kind = v.WhichOneof("value")
    if kind == "string_value":
        return v.string_value
    if kind == "int_value":
        return str(v.int_value)
    return ""


def string_value(v):
    """stringValueFromAnyValue (v2.2.1): a string, an int in decimal, or
    the one element of an array of one; "" otherwise. Dictionary references
    (string_value_strindex) are not resolved."""
    if _single(v):
        return _single(v)
    if v.WhichOneof("value") == "array_value" and len(v.array_value.values) == 1:
        return _single(v.array_value.values[0])
    return ""


def _string_attribute(kv):
    # KeyValue.key only: key_strindex is not resolved either.
    return string_value(kv.value)


def service_name(resource):
    fallback = "unknown_service"
    for kv in resource.attributes:
        if kv.key == "service.name" and _string_attribute(kv):
            return _string_attribute(kv)
        if kv.key == "process.executable.name" and _string_attribute(kv):
            fallback += ":" + _string_attribute(kv)
    return fallback


def series_labels(name, resource, scope, service):
    labels = [("__delta__", "false"), ("__otel__", "true"), ("__name__", name)]
    seen = {"__name__"}
    for kv in list(resource.attributes) + list(scope.attributes):
        value = _string_attribute(kv)
        if kv.key in seen or not value:
            continue
        labels.append((kv.key, value))
        seen.add(kv.key)
    labels.append(("service_name", service))
    return labels


class _Builder:
    def __init__(self, src, d, profile_pb2):
        self.src, self.d, self.pb = src, d, profile_pb2
        self.p = profile_pb2.Profile()
        self.strings = {}
        self.str("")
        self.functions, self.locations, self.mappings = {}, {}, {}

    def str(self, s):
        if s not in self.strings:
            self.strings[s] = len(self.p.string_table)
            self.p.string_table.append(s)
        return self.strings[s]

    def dstr(self, i, what):
        return _at(self.d.string_table, i, what)

    def header(self):
        src, p = self.src, self.p
        t = self.dstr(src.sample_type.type_strindex, "sample type")
        u = self.dstr(src.sample_type.unit_strindex, "sample unit")
        pt = self.dstr(src.period_type.type_strindex, "period type")
        pu = self.dstr(src.period_type.unit_strindex, "period unit")
        p.time_nanos = src.time_unix_nano
        p.duration_nanos = src.duration_nano
        p.period = src.period
        p.period_type.type, p.period_type.unit = self.str(pt), self.str(pu)
        profile_type = "%s:%s:%s:%s" % (t, u, pt if src.period else "",
                                        pu if src.period else "")
        self.scale = 1
        if profile_type == "samples:count:cpu:nanoseconds":
            t, u, name, self.scale = "cpu", "nanoseconds", "process_cpu", src.period
        else:
            name = profile_type.split(":")[2]
        st = p.sample_type.add()
        st.type, st.unit = self.str(t), self.str(u)
        p.default_sample_type = self.str(t)
        return name

    def function(self, i):
        if i not in self.functions:
            f = _at(self.d.function_table, i, "function")
            out = self.p.function.add()
            out.id = len(self.p.function)
            out.name = self.str(self.dstr(f.name_strindex, "function name"))
            out.system_name = self.str(self.dstr(f.system_name_strindex,
                                                 "function system name"))
            out.filename = self.str(self.dstr(f.filename_strindex,
                                              "function file name"))
            out.start_line = f.start_line
            self.functions[i] = out.id
        return self.functions[i]

    def mapping(self, i):
        if i not in self.mappings:
            m = _at(self.d.mapping_table, i, "mapping")
            out = self.p.mapping.add()
            out.id = len(self.p.mapping)
            out.memory_start, out.memory_limit = m.memory_start, m.memory_limit
            out.file_offset = m.file_offset
            out.filename = self.str(self.dstr(m.filename_strindex, "mapping file"))
            for ai in m.attribute_indices:
                a = _at(self.d.attribute_table, ai, "attribute")
                if self.dstr(a.key_strindex, "attribute key") == \
                        "process.executable.build_id.gnu":
                    out.build_id = self.str(a.value.string_value)
            self.mappings[i] = out.id
        return self.mappings[i]

    def location(self, i):
        if i not in self.locations:
            loc = _at(self.d.location_table, i, "location")
            out = self.p.location.add()
            out.id = len(self.p.location)
            out.mapping_id = self.mapping(loc.mapping_index)
            out.address = loc.address
            for line in loc.lines:
                l = out.line.add()
                l.function_id = self.function(line.function_index)
                l.line = line.line
            self.locations[i] = out.id
        return self.locations[i]

    def sample(self, s):
        if not s.values:
            raise ConversionError("sample value is required")
        out = self.p.sample.add()
        out.value.extend(v * self.scale for v in s.values[:1])
        stack = _at(self.d.stack_table, s.stack_index, "stack")
        for li in stack.location_indices:
            out.location_id.append(self.location(li))
        for ai in s.attribute_indices:
            a = _at(self.d.attribute_table, ai, "attribute")
            key = self.dstr(a.key_strindex, "attribute key")
            value = string_value(a.value)
            if key == "service.name" or not value:
                continue
            lab = out.label.add()
            lab.key, lab.str = self.str(key), self.str(value)
        if s.link_index:
            link = _at(self.d.link_table, s.link_index, "link")
            lab = out.label.add()
            lab.key, lab.str = self.str("span_id"), self.str(link.span_id.hex())
            if len(link.trace_id) == 16:
                lab = out.label.add()
                lab.key, lab.str = self.str("trace_id"), self.str(link.trace_id.hex())


def convert(request, profile_pb2):
    """[(series labels, pprof bytes)] for every profile of the request."""
    d = request.dictionary
    if not request.HasField("dictionary"):
        raise ConversionError("missing profile metadata dictionary")
    out = []
    for rp in request.resource_profiles:
        fallback = service_name(rp.resource)
        for sp in rp.scope_profiles:
            for src in sp.profiles:
                # ConvertOtelToGoogle: one profile per sample service.name.
                builders, name = {}, ""
                for s in src.samples:
                    svc = _sample_service(s, d)
                    if svc not in builders:
                        builders[svc] = _Builder(src, d, profile_pb2)
                        name = builders[svc].header()
                    builders[svc].sample(s)
                for svc, b in builders.items():
                    out.append((series_labels(name, rp.resource, sp.scope,
                                              svc or fallback),
                                b.p.SerializeToString()))
    return out


def _sample_service(sample, d):
    for ai in sample.attribute_indices:
        a = _at(d.attribute_table, ai, "attribute")
        if _at(d.string_table, a.key_strindex, "attribute key") == "service.name":
            return string_value(a.value)
    return ""
