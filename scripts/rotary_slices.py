#!/usr/bin/env python3
# Usage: scripts/rotary_slices.py DUMP [N] > SLICE.hlo  (N: how many real/imag roots, default all)
# Cuts the complex (rotary-embedding) part out of a dump: every real/imag
# instruction of the computation that builds complex values, with its
# operand closure; operands that are parameters, tuple elements or large
# become parameters of the new entry; only the computations it calls are kept.
import re,sys
text=open(sys.argv[1]).read()
comps=[c for c in text.split('\n\n') if c.strip()]
header=comps[0].split('\n')[0]
header=re.sub(r',\s*entry_computation_layout=\{.*$','',header)
pat=re.compile(r'^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.+?)\s+([\w\-]+)\((.*)$')
def elems(shape):
    m=re.match(r'\w+\[([\d,]*)\]',shape); n=1
    if not m: return 1<<40
    for d in m.group(1).split(','):
        if d: n*=int(d)
    return n
for c in comps:
    if ' complex(' not in c: continue
    lines=c.split('\n'); insts={}; order=[]
    for l in lines[1:]:
        m=pat.match(l)
        if m: insts[m.group(1)]=(m.group(2),m.group(3),m.group(4),l); order.append(m.group(1))
    targets=[n for n in order if insts[n][1] in ('real','imag')][:int(sys.argv[2]) if len(sys.argv)>2 else 1000]
    keep=set(); params=[]; stack=list(targets)
    while stack:
        n=stack.pop()
        if n in keep or n in params: continue
        shape,op,rest,l=insts[n]
        if op in ('parameter','get-tuple-element','while','call','custom-call','tuple') or elems(shape)>(1<<22) and op not in ('real','imag'):
            params.append(n); continue
        keep.add(n)
        for o in re.findall(r'%([\w.\-]+)', rest.split('),')[0] if '),' in rest else rest):
            if o in insts: stack.append(o)
    out=[header]
    for other in comps[1:]:
        if other.lstrip().startswith('ENTRY'): continue
        out.append(other)
    body=['ENTRY %slice {']
    for k,p in enumerate(params):
        body.append(f'  %{p} = {insts[p][0]} parameter({k})')
    for n in order:
        if n in keep:
            l=insts[n][3].replace('ROOT ','')
            body.append(l)
    body.append('  ROOT %t = (' + ', '.join(insts[t][0].split('{')[0] for t in targets) + ') tuple(' + ', '.join('%'+t for t in targets) + ')')
    body.append('}')
    text2='\n'.join(body)
    text2=re.sub(r'%([\w.\-]+)', lambda m: '%s_'+m.group(1) if m.group(1) in keep or m.group(1) in params or m.group(1)=='t' else m.group(0), text2)
    refs=set(re.findall(r'(?:to_apply|calls|condition|body|comparator)=%?([\w.\-]+)', text2))
    out=[header]+[o for o in out[1:] if re.match(r'\s*%?([\w.\-]+)', o).group(1) in refs]+[text2]
    print('\n'.join(out))
    break
