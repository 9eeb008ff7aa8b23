from .b import GPU
from . import b
import pkg.b as m
GPU = 0
def f(args):
    x.to(GPU)
    x.to(b.GPU)
    x.to(m.GPU)
    x.to(args.gpu)
p.add_argument("--gpu", type=int)
