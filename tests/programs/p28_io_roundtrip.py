"""File I/O round trips in a temporary directory: .npy, .npz (plain and compressed), text
files with headers and comments, CSV with missing values, and raw binary files."""

import os
import tempfile


def main(np):
    rng = np.random.default_rng(12)
    measurements = rng.normal(10, 2, size=(6, 3)).round(3)
    ids = np.arange(100, 106)
    flags = np.array([True, False, True, True, False, True])
    results = {}
    with tempfile.TemporaryDirectory() as d:
        # .npy
        p = os.path.join(d, "m.npy")
        np.save(p, measurements)
        back = np.load(p)
        print("npy:", back.shape, back.dtype, "equal:", np.array_equal(back, measurements))
        # np.save appends .npy when missing
        np.save(os.path.join(d, "ids"), ids)
        print("files:", sorted(os.listdir(d)))

        # .npz with named arrays
        pz = os.path.join(d, "bundle.npz")
        np.savez(pz, measurements=measurements, ids=ids, flags=flags)
        with np.load(pz) as z:
            print("npz keys:", sorted(z.files))
            print("ids back:", z["ids"], "flags back:", z["flags"])
            results["npz_meas"] = z["measurements"]
        pc = os.path.join(d, "big.npz")
        big = np.tile(np.arange(50, dtype=np.int32), 200)
        np.savez_compressed(pc, big=big)
        with np.load(pc) as z:
            print("compressed round trip:", np.array_equal(z["big"], big), z["big"].dtype)
        print("compressed smaller than raw:", os.path.getsize(pc) < big.nbytes)

        # savetxt / loadtxt with header, format and delimiter
        pt = os.path.join(d, "table.csv")
        table = np.column_stack([ids, measurements])
        np.savetxt(pt, table, fmt=["%d", "%.3f", "%.3f", "%.3f"], delimiter=",",
                   header="id,a,b,c", comments="# ")
        with open(pt) as fh:
            text = fh.read()
        print("csv text:\n" + text.strip())
        loaded = np.loadtxt(pt, delimiter=",")
        print("loadtxt:", loaded.shape, "ids:", loaded[:, 0].astype(int))
        print("values equal:", np.allclose(loaded[:, 1:], measurements))
        cols = np.loadtxt(pt, delimiter=",", usecols=(0, 2), unpack=True)
        print("unpacked columns:", len(cols), cols[1][:3])
        sk = np.loadtxt(pt, delimiter=",", skiprows=3, max_rows=2, dtype=np.float32)
        print("skiprows/max_rows:", sk.shape, sk.dtype)

        # genfromtxt with missing values and names
        pg = os.path.join(d, "gaps.csv")
        with open(pg, "w") as fh:
            fh.write("x,y,z\n1,2.5,3\n4,,6\n7,8.25,\n,11,12\n")
        g = np.genfromtxt(pg, delimiter=",", skip_header=1)
        print("genfromtxt:\n", g)
        print("missing count:", np.isnan(g).sum(), "column means:", np.round(np.nanmean(g, axis=0), 4))
        filled = np.genfromtxt(pg, delimiter=",", skip_header=1, filling_values=-1)
        print("filled:\n", filled)
        rec = np.genfromtxt(pg, delimiter=",", names=True)
        print("named columns:", rec.dtype.names, "y:", rec["y"])
        results["g"] = g

        # raw binary with tofile/fromfile and a structured header written by hand
        pb = os.path.join(d, "raw.bin")
        arr = np.linspace(0, 1, 8, dtype=np.float32)
        arr.tofile(pb)
        raw = np.fromfile(pb, dtype=np.float32)
        print("fromfile:", raw, "bytes on disk:", os.path.getsize(pb))
        print("frombuffer of bytes:", np.frombuffer(arr.tobytes()[:8], dtype=np.float32))

        # text round trip of integers with a custom format and a comment line
        pi_ = os.path.join(d, "ints.txt")
        mat = np.arange(12).reshape(3, 4) * 7
        np.savetxt(pi_, mat, fmt="%4d", footer="end of matrix")
        print("ints file:", open(pi_).read().splitlines())
        ints = np.loadtxt(pi_, dtype=int)
        print("ints back equal:", np.array_equal(ints, mat), ints.dtype)

        # load with mmap_mode reads the same data lazily
        mm = np.load(p, mmap_mode="r")
        print("mmap first row:", np.asarray(mm[0]), "sum:", np.round(np.asarray(mm).sum(), 3))
        del mm
    results.update({"back": back, "loaded": loaded, "filled": filled, "raw": raw, "ints": ints})
    return results
