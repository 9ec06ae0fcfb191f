# A stand-in for PyTorch installed without CUDA, for the hook's test only:
# real torch cannot be installed on these machines (its CPU wheels' index is
# unreachable, the PyPI wheels pull GBs of CUDA libraries). It offers what
# the hook calls first, the way torch without CUDA answers it.


class cuda(object):
    @staticmethod
    def is_available():
        return False

    @staticmethod
    def is_initialized():
        return False
