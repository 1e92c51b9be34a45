"""The older path of the same functions (mindspore.communication.management)."""

from lockstep.communication import (get_group_size, get_local_rank, get_local_rank_size,
                                    get_rank, init, release)
