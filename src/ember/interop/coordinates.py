"""Where a grid cell is, in metres, for tools that work in the plane.

The grid's rectangle spans x from 0 to ``cols * c`` and y from 0 to
``rows * c`` (c the cell size).  Row 0 is the top row, so y grows towards
the north (row - 1), as on EMBER's pictures and on PedPy's plots:

    cell [row, col]: x from col * c to (col + 1) * c,
                     y from (rows - row - 1) * c to (rows - row) * c;
    its centre:      x = (col + 1/2) * c,  y = (rows - row - 1/2) * c.

Each value is computed exactly and rounded to a float once, so a corner
shared by two cells, an edge shared by a line and a polygon, is the same
float wherever it appears.
"""

from fractions import Fraction

HALF = Fraction(1, 2)


class PlanCoordinates:
    """Metre coordinates of a ``rows`` x ``cols`` grid's cell edges and centres (module docstring)."""

    def __init__(self, rows, cols, cell_size):
        self.rows, self.cols = rows, cols
        self.cell_size = cell_size  # a Fraction: metres
        # Centres as text, per column and per row: a position's "x y" is two lookups.
        self._x_text = [repr(self.centre_x(col)) for col in range(cols)]
        self._y_text = [repr(self.centre_y(row)) for row in range(rows)]

    def edge_x(self, col):
        """x of the vertical grid line left of column ``col`` (0 <= col <= cols)."""
        return float(col * self.cell_size)

    def edge_y(self, row):
        """y of the horizontal grid line above row ``row`` (0 <= row <= rows)."""
        return float((self.rows - row) * self.cell_size)

    def centre_x(self, col):
        return float((col + HALF) * self.cell_size)

    def centre_y(self, row):
        return float((self.rows - row - HALF) * self.cell_size)

    def centre(self, row, col):
        """(x, y) of the centre of cell [row, col]."""
        return self.centre_x(col), self.centre_y(row)

    def centre_text(self, row, col):
        """``"x y"``: the centre's coordinates as the shortest text that reads back as the same floats."""
        return f"{self._x_text[col]} {self._y_text[row]}"

    def square(self, row, col):
        """The cell's corners (x, y), counter-clockwise from its south-west corner."""
        west, east = self.edge_x(col), self.edge_x(col + 1)
        south, north = self.edge_y(row + 1), self.edge_y(row)
        return [(west, south), (east, south), (east, north), (west, north)]
