"""Image-like array manipulation on a small synthetic RGB picture: flips, rotations, tiling,
channel stacking and splitting, block assembly and pooling."""


def main(np):
    h, w = 6, 8
    yy, xx = np.indices((h, w))
    red = (xx * 32).astype(np.uint8)
    green = (yy * 40).astype(np.uint8)
    blue = ((xx + yy) % 2 * 255).astype(np.uint8)
    img = np.stack([red, green, blue], axis=-1)
    print("image:", img.shape, img.dtype, "channel means:", img.reshape(-1, 3).mean(axis=0))

    # geometry
    flipped_lr = np.flip(img, axis=1)
    flipped_ud = img[::-1]
    print("fliplr agrees:", np.array_equal(flipped_lr, np.fliplr(img)))
    print("flipud agrees:", np.array_equal(flipped_ud, np.flipud(img)))
    r90 = np.rot90(img)
    r270 = np.rot90(img, k=-1)
    print("rot90 shape:", r90.shape, "four turns is identity:", np.array_equal(np.rot90(img, 4), img))
    print("rot90 then rot270:", np.array_equal(np.rot90(r90, -1), img), np.array_equal(np.rot90(r270), img))
    chw = np.transpose(img, (2, 0, 1))
    print("CHW shape:", chw.shape, "moveaxis agrees:", np.array_equal(np.moveaxis(img, -1, 0), chw))
    print("red channel, first row:", chw[0, 0])

    # greyscale (ITU-R 601 weights), thresholding and a histogram
    grey = np.round(img @ np.array([0.299, 0.587, 0.114])).astype(np.uint8)
    print("grey:\n", grey)
    hist, edges = np.histogram(grey, bins=4, range=(0, 256))
    print("grey histogram:", hist, edges)
    mask = grey > np.median(grey)
    print("pixels above median:", mask.sum())

    # tiling and repetition (nearest-neighbour upscaling)
    tile = np.tile(grey[:2, :2], (2, 3))
    print("tiled:\n", tile)
    up = np.repeat(np.repeat(grey[:2, :3], 2, axis=0), 2, axis=1)
    print("upscaled:\n", up)
    print("kron agrees:", np.array_equal(up, np.kron(grey[:2, :3], np.ones((2, 2), dtype=np.uint8))))

    # splitting into quadrants and reassembling with block
    top, bottom = np.split(grey, 2, axis=0)
    tl, tr = np.hsplit(top, 2)
    bl, br = np.hsplit(bottom, 2)
    mosaic = np.block([[br, bl], [tr, tl]])
    print("mosaic == roll by half:", np.array_equal(mosaic, np.roll(grey, (h // 2, w // 2), axis=(0, 1))))
    parts = np.array_split(np.arange(w), 3)
    print("array_split sizes:", [len(p) for p in parts])
    side = np.concatenate([grey, grey[:, ::-1]], axis=1)
    print("side-by-side:", side.shape, "mirror symmetric:", np.array_equal(side, side[:, ::-1]))
    pair = np.stack([grey, grey.T[:h, :h].repeat(2, axis=1)[:, :w]])
    print("stacked pair:", pair.shape)
    d = np.dstack([red, green])
    v = np.vstack([red, green])
    print("dstack/vstack shapes:", d.shape, v.shape, "column_stack:", np.column_stack([red[0], green[0]]).shape)

    # 2x2 average pooling via reshape, and max pooling
    pooled = grey.reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
    maxp = grey.reshape(h // 2, 2, w // 2, 2).max(axis=(1, 3))
    print("avg pool:\n", pooled)
    print("max pool:\n", maxp)

    # padding for a border, crop, and squeeze/expand of a batch axis
    framed = np.pad(grey, ((1, 1), (2, 2)), constant_values=255)
    print("framed:", framed.shape, "border all white:", bool(np.all(framed[0] == 255) and np.all(framed[:, -1] == 255)))
    batch = np.expand_dims(img, 0)
    print("batch:", batch.shape, "squeezed:", np.squeeze(batch).shape)
    clipped = np.clip(img.astype(np.int16) + 100, 0, 255).astype(np.uint8)
    print("brightened max per channel:", clipped.max(axis=(0, 1)))
    wrapped = img + np.uint8(100)
    print("uint8 wraparound sample:", wrapped[0, -1], "vs saturated", clipped[0, -1])
    return {"grey": grey, "r90": r90, "mosaic": mosaic, "pooled": pooled, "maxp": maxp,
            "tile": tile, "up": up, "wrapped": wrapped}
