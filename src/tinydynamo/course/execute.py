"""An nbgrader executor that survives a learner's cell killing the Python kernel.

nbgrader already interrupts a cell that runs past its time limit and records exceptions as
failed tests. A cell that kills the kernel (``os._exit``, a segfault in C code, running out of
memory) would abort the whole grading run instead. ``ContainedExecute`` records that cell as failed,
starts a fresh kernel, replays the cells that ran before it (their outputs discarded), and goes
on, so the damage is limited to the tests that depend on the broken cell.

A checker that runs code able to crash (a08's generated C++) wraps each case in
``running_case(name)``: the name stays in ``RUNNING_CASE_FILE``, in the notebook's directory, until
the case is over, so the grader can say which case killed the kernel.
"""
import contextlib
import copy
import os

from nbclient.exceptions import DeadKernelError
from nbformat import NotebookNode
from nbgrader.preprocessors import Execute

KERNEL_DIED = (
    "the Python kernel died while running this cell (os._exit, a crash in C code, or running out "
    "of memory). The grader restarted it and re-ran the cells before this one."
)
RUNNING_CASE_FILE = ".tinydynamo-running-case"


@contextlib.contextmanager
def running_case(name):
    """Leave ``name`` in RUNNING_CASE_FILE (in the working directory) while the block runs."""
    with open(RUNNING_CASE_FILE, "w") as f:
        f.write(name)
    try:
        yield
    finally:  # another grader in the same directory (mutant checks run two at a time) may have
        with contextlib.suppress(FileNotFoundError):  # removed it already
            os.remove(RUNNING_CASE_FILE)


def crashed_case(directory):
    """The case that was running when the kernel died (and forget it), or None."""
    path = os.path.join(directory or ".", RUNNING_CASE_FILE)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        name = f.read()
    os.remove(path)
    return name


class ContainedExecute(Execute):
    def preprocess(self, nb, resources=None, km=None):
        self._executed = []
        return super().preprocess(nb, resources, km)

    def preprocess_cell(self, cell, resources, index):
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            case = crashed_case(resources.get("metadata", {}).get("path"))
            message = KERNEL_DIED if case is None else f"{KERNEL_DIED} It crashed in the case: {case}"
            cell.outputs.append(
                NotebookNode(output_type="error", ename="KernelDied", evalue=message, traceback=[message])
            )
            self._restart_and_replay()
            return cell, self.resources
        if cell.cell_type == "code":
            self._executed.append((copy.deepcopy(cell), index))
        return cell, resources

    def _restart_and_replay(self):
        self.log.warning("kernel died; restarting it and replaying %d cells", len(self._executed))
        self._cleanup_kernel()
        self.km = self.create_kernel_manager()
        self.start_new_kernel()
        self.start_new_kernel_client()
        for cell, index in self._executed:
            replay = copy.deepcopy(cell)
            replay.outputs = []
            self.execute_cell(replay, index, store_history=True)
